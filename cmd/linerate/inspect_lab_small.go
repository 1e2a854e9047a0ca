//go:build small

package main

// labNodeNetns: the small build has no labs (inspect --lab).
func labNodeNetns(string, string) (string, error) { return "", notBuilt("inspect --lab") }
