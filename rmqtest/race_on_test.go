//go:build race

package rmqtest_test

const raceEnabled = true
