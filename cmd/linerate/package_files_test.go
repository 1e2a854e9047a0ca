package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// package-files writes a man page for every command a user can type and
// the three shell completions.
func TestPackageFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if out, err := execute("package-files", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		page := filepath.Join(dir, "man1", strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: no man page: %v", c.CommandPath(), err)
		} else if !strings.Contains(string(b), ".TH \"LINERATE\" \"1\" \"Nov 2023\"") || !strings.Contains(string(b), c.Short[:10]) {
			t.Errorf("%s: the page lacks its header or its description:\n%.300s", page, b)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if _, err := os.Stat(filepath.Join(dir, "man1", "linerate-package-files.1")); err == nil {
		t.Error("the hidden package-files command has a man page")
	}
	for _, f := range []string{"linerate.bash", "_linerate", "linerate.fish"} {
		if b, err := os.ReadFile(filepath.Join(dir, "completions", f)); err != nil || !strings.Contains(string(b), "linerate") {
			t.Errorf("completion %s: %v", f, err)
		}
	}
}
