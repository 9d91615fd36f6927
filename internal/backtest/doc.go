// Package backtest replays scripted job timelines through the real
// exporter binary, a fake npu-smi and the shipped alert rules in a real
// Prometheus, with time compressed (one simulated minute per real second),
// and reports for each timeline the lead time of the preventive alerts
// before the failure and every alert that fired where silence was
// expected. `make backtest` prints the table; `go test` (not -short) runs
// it as part of `make test`. Timelines live in timelines_test.go, one
// table row each: docs/headroom.md ("Backtest") says how to add one.
//
// CompressRules is the only change the backtest makes to the shipped
// rules: it divides every duration of a `for:`, a range or subquery
// selector and an `offset` by the compression factor, and refuses a rules
// file in which anything else would differ.
package backtest
