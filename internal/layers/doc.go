// Package layers holds the test that keeps runbot's import rules true:
// imports point down only, checks and actions never import each other, and
// runbooks never imports bot. The rules are the table in DESIGN.md.
package layers
