package configstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// BenchmarkSnapshotPolicy is the data path's read: the current view, a model's policy and the
// drain checks of one candidate.
func BenchmarkSnapshotPolicy(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := nsClientAt(b, shared.Endpoints(), newNamespace())
	s, err := configstore.New(cli, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: fmt.Sprintf("m%d", i), OverflowCap: 1}, 0); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = s.Run(ctx) }()
	poll.Until(b, waitTimeout, func() bool { return len(s.Snapshot().Models()) >= 100 }, "100 policies loaded")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		v := s.Snapshot()
		if policyOf(v, "m42").OverflowCap != 1 || v.Drained("c1", "us-east-1") {
			b.Fatal("wrong view")
		}
	}
}

// BenchmarkWatchPropagation measures a change's trip: written through one store, visible in
// another store's view (ns/op is the propagation delay).
func BenchmarkWatchPropagation(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := newNamespace()
	wcli := nsClientAt(b, shared.Endpoints(), ns)
	rcli := nsClientAt(b, shared.Endpoints(), ns)
	writer, err := configstore.New(wcli, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	reader, err := configstore.New(rcli, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = reader.Run(ctx) }()
	poll.Until(b, waitTimeout, func() bool { return reader.Snapshot().Loaded() }, "the reader's first load")
	b.ReportAllocs()
	on := false
	for b.Loop() {
		on = !on
		v := reader.Snapshot()
		if err := writer.SetClusterDrain(ctx, "c1", on); err != nil {
			b.Fatal(err)
		}
		for reader.Snapshot().ClusterDrained("c1") != on {
			select {
			case <-v.Replaced():
				v = reader.Snapshot()
			case <-ctx.Done():
				b.Fatal("change never arrived")
			}
		}
	}
}
