// Package autotune owns the loop of `tune auto`: it drives traffic
// (a baseline, then one trial per candidate change), diagnoses the device
// under test from its own samples, and judges each trial against the
// noise of the measurement. Every change it tries goes through package
// tune — planned, journalled, applied, read back, and kept or rolled
// back — so this package decides and tune changes; tune knows nothing of
// traffic or diagnose.
package autotune
