//go:build !race

package bundlebuild

// raceBuild: see heap_measure_race_test.go.
const raceBuild = false
