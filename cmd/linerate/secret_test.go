package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/usage"
	"linerate/wire"
)

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := file("private", "s3cret\nsecond line\n", 0o600)
	shared := file("shared", "s3cret\n", 0o644)
	empty := file("empty", "\n", 0o600)
	for _, c := range []struct {
		name       string
		env        *string
		token      string
		tokenGiven bool
		file       string
		want, warn string
		err        string
	}{
		{name: "nothing: an open server"},
		{name: "file", file: private, want: "s3cret"},
		{name: "file others may read", file: shared, want: "s3cret", warn: "other users may read it"},
		{name: "empty file", file: empty, err: "empty first line"},
		{name: "missing file", file: filepath.Join(dir, "none"), err: "--token-file"},
		{name: "a directory", file: dir, err: "not a regular file"},
		{name: "environment", env: ptr("  env-secret "), want: "env-secret"},
		{name: "empty environment", env: ptr(""), err: "set but empty"},
		{name: "file before environment", env: ptr("env-secret"), file: private, want: "s3cret"},
		{name: "--token, warned", token: "s3cret", tokenGiven: true, want: "s3cret", warn: "visible to every user"},
		{name: "--token empty", token: "", tokenGiven: true, err: "--token is empty"},
		{name: "both", token: "x", tokenGiven: true, file: private, err: "give one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != nil {
				t.Setenv(wire.TokenEnv, *c.env)
			} else {
				t.Setenv(wire.TokenEnv, "")
				os.Unsetenv(wire.TokenEnv)
			}
			got, warnings, err := readSecret(c.token, c.tokenGiven, c.file)
			if c.err != "" {
				if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want bad input saying %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
			if w := strings.Join(warnings, "; "); (c.warn == "") != (w == "") || !strings.Contains(w, c.warn) {
				t.Errorf("warnings %q, want one saying %q", w, c.warn)
			}
		})
	}
}

func ptr(s string) *string { return &s }
