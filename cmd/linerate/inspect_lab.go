//go:build !small

package main

import "linerate/lab"

// labNodeNetns is the namespace of a lab's node (inspect --lab --node).
func labNodeNetns(name, node string) (string, error) { return lab.NodeNetns(name, node) }
