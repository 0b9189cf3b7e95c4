// Package builtin holds the runbooks runbot ships (*.yaml), their test
// files (*_test.yaml) and the tests of their content. The runbooks are
// embedded in the binary from here, as FS, for the catalog to load.
package builtin

import "embed"

// FS is the shipped runbooks and their test files, at the root of the
// file system (sglang-pd-wedge.yaml, sglang-pd-wedge_test.yaml).
//
//go:embed *.yaml
var FS embed.FS
