// Package archtest holds tests of the repository's shape rather than of its
// behaviour: the import layering that README.md's "Layering" block writes
// down is checked against `go list -json ./...`.
//
// The block is a fenced code block right after the heading "### Layering".
// Each line names a package (a path relative to the module, or a pattern
// ending in "/*" for every direct subpackage, or "internal/*") followed by
// "->" and the packages it may import directly, comma separated, with the
// same patterns; "-> (none)" means it imports no rmq package. Every package of
// the module must be covered by a line; an import that no line allows, a
// package no line covers, or a cycle among the lines fails the test.
package archtest
