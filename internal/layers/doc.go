// Package layers holds the test that keeps runbot's import rules true:
// imports point down only, checks and actions never import each other, the
// core (runbooks, dispatch) never imports a chat platform or a trigger,
// and no package imports what sits above it. The rules are the table in
// layers_test.go, one line per package with the packages it may import.
package layers
