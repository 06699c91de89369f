// Package archtest holds tests of the repository's shape rather than of its
// behaviour: the import layering that README.md's "Layering" block writes
// down is checked against `go list -json ./...` and against the sources of
// the repository's nested modules (integration, bench/compare); and a
// throwaway module importing rmqtest must keep the stock Go client version it
// asks for and get none of the modules only rmq's own tests and benchmark
// need (TestImportingRMQTestKeepsTheUsersVersions). Non-test code writes
// each system topic name and message property key that message/ defines
// only there (TestWireNamesDefinedOnce).
//
// The block is a fenced code block right after the heading "### Layering".
// Each line names a package (a path relative to the module, or a pattern
// ending in "/*" for every direct subpackage, or "internal/*") followed by
// "->" and the packages it may import directly, comma separated, with the
// same patterns; "-> (none)" means it imports no rmq package. Every package of
// the modules must be covered by a line; an import that no line allows, a
// package no line covers, or a cycle among the lines fails the test.
package archtest
