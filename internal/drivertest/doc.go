// Package drivertest proves linerate on real NIC drivers: its tests build
// labs whose nodes are QEMU guests (lab up --vm) with e1000e, virtio-net
// and vmxnet3 NICs driven by the kernel's own drivers, and run linerate in
// them as a user would — inspect, tune apply, status and rollback, traffic
// into and out of the guest — through the real binary. It has no code of
// its own besides the tests' helpers; `make test` runs it like any
// package (it needs root, QEMU and a Debian kernel: make deps installs
// them).
package drivertest
