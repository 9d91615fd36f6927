package main

import "testing"

func TestMedians(t *testing.T) {
	rs := []*result{
		{Seq: []float64{10, 20, 30}, SeqSteal: 0},
		{Seq: []float64{14, 20, 30}, SeqSteal: 30},
		{Seq: []float64{12, 20, 30}, SeqSteal: 2},
	}
	get := func(r *result) (float64, float64) { return r.Seq[0], r.SeqSteal }
	quiet, all := medians(rs, get)
	if quiet != (med{median: 11, n: 2}) || all != (med{median: 12, n: 3}) {
		t.Fatalf("quiet %+v, all %+v", quiet, all)
	}
	if m := median(nil); m != (med{}) {
		t.Fatalf("median of nothing: %+v", m)
	}
}
