// Package version holds linerate's version, set at link time by the Makefile
// (-X linerate/internal/version.Version=...).
package version

// Version is "dev" unless the build sets it.
var Version = "dev"
