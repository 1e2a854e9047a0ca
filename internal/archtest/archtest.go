// Package archtest holds tests of the shape of linerate's imports: that
// the floors of the program (the model, its arithmetic and the rules over
// it) link none of the libraries that speak to the kernel (netlink, eBPF).
// It has no code of its own.
package archtest
