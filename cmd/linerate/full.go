//go:build !small

package main

// leftOut is what this build leaves out: nothing (small.go lists what the
// small build does).
var leftOut []string
