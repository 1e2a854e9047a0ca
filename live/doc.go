// Package live owns linerate's live view of a machine: the once-a-second
// Snapshot built from the sampler's rates (box.Rates) and, during a bench,
// its interval figures; the Hub that keeps the latest snapshot and fans it
// out to subscribers (a slow subscriber is dropped, never waited for, so
// the sampler is not held up); the HTTP handlers that serve it (a page
// that updates itself over Server-Sent Events, /events, and /metrics in
// the Prometheus text format: counters summed over the sampled intervals,
// the Totals, and a few gauges); and the text renderer of `linerate watch`.
//
// The package reads nothing on its own except through a View, which turns
// rates into a Snapshot and looks up, now and then, which interfaces are
// up and what each interrupt is called.
package live
