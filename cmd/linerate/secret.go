package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"linerate/internal/usage"
	"linerate/wire"
)

// maxSecretFile bounds what --token-file reads: a secret is one short line.
const maxSecretFile = 4 << 10

// readSecret returns the shared secret of serve and bench: the first line
// of --token-file, else $LINERATE_TOKEN, else --token. A secret given but
// empty is refused (it would turn authentication off without saying so).
// The warnings are for stderr: a --token is visible to every user of the
// machine in ps, and a secret file others may read is no secret.
func readSecret(token string, tokenGiven bool, file string) (secret string, warnings []string, err error) {
	env, envSet := os.LookupEnv(wire.TokenEnv)
	switch {
	case tokenGiven && file != "":
		return "", nil, usage.Errorf("--token and --token-file: give one")
	case file != "":
		return readSecretFile(file)
	case tokenGiven:
		if strings.TrimSpace(token) == "" {
			return "", nil, usage.Errorf("--token is empty: give a secret, or no --token for a server anyone may use")
		}
		return token, []string{fmt.Sprintf("--token is visible to every user of this machine (ps, /proc); prefer --token-file or $%s", wire.TokenEnv)}, nil
	case envSet:
		if strings.TrimSpace(env) == "" {
			return "", nil, usage.Errorf("$%s is set but empty: give a secret, or unset it", wire.TokenEnv)
		}
		return strings.TrimSpace(env), nil, nil
	}
	return "", nil, nil
}

func readSecretFile(file string) (string, []string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", nil, usage.Errorf("--token-file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, usage.Errorf("--token-file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", nil, usage.Errorf("--token-file %s: not a regular file", file)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile))
	if err != nil {
		return "", nil, usage.Errorf("--token-file %s: %w", file, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	s := strings.TrimSpace(line)
	if s == "" {
		return "", nil, usage.Errorf("--token-file %s: empty first line", file)
	}
	var warnings []string
	if st.Mode().Perm()&0o077 != 0 {
		warnings = append(warnings, fmt.Sprintf("--token-file %s: other users may read it (mode %04o); chmod 600 it", file, st.Mode().Perm()))
	}
	return s, warnings, nil
}

// warn prints each warning as one line on w.
func warn(w io.Writer, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintln(w, "linerate: warning:", m)
	}
}
