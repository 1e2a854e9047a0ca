// Package report renders linerate's results for people and programs: the
// inspect tables of a box (Inspect) and its stable JSON form (JSON), and the
// findings of diagnose. It formats what it is given and reads nothing
// itself.
package report
