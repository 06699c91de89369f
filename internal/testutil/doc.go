// Package testutil holds the helpers that tests of several packages share:
// free listening ports, waiting for a condition with a deadline, a
// concurrency-safe capture buffer and a test logger. Only _test.go files
// import it.
//
// It imports nothing of this module, so the tests of every package, store
// and remoting included, can use it without an import cycle. Helpers that
// need a package of the module live in subpackages: storetest (a temporary
// store and reading its queues), brokertest (wire-level requests to a
// broker) and testbroker (an in-process broker, alone or registered with an
// in-process name server).
package testutil
