package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/switchyard-dev/switchyard/gossip"
)

// Result is what one pool size measured. Rates are per second of the measured window, and times
// in milliseconds, of the modelled clock (Config.Dilation taken out); CPU is per real second.
type Result struct {
	Gateways int `json:"gateways"`
	Routers  int `json:"routers"`
	// Stopped says why the size has no figures (formation or its time ran out); empty when measured.
	Stopped string `json:"stopped,omitempty"`

	FormSeconds float64 `json:"form_seconds"`
	// SentPerNode is every byte a node sent (UDP packets and TCP streams), mean over all nodes.
	SentPerNode float64 `json:"sent_bytes_per_second_per_node"`
	// SentPerRouter is the same, mean over the routers.
	SentPerRouter float64 `json:"sent_bytes_per_second_per_router"`
	// ReceivedPerNode is every byte a node received, mean over all nodes.
	ReceivedPerNode float64 `json:"received_bytes_per_second_per_node"`
	// OwnPerGateway is the summary chunks a gateway published itself; RelayedPerNode those of
	// others a node relayed.
	OwnPerGateway  float64 `json:"own_broadcast_bytes_per_second_per_gateway"`
	RelayedPerNode float64 `json:"relayed_broadcast_bytes_per_second_per_node"`

	// Convergence of a change: generation → applied at a router, over every (router, change),
	// and generation → applied at the last router, over every change.
	Marks      int     `json:"marks"`
	Missed     int     `json:"missed"`
	ArrivalP50 float64 `json:"arrival_p50_ms"`
	ArrivalP99 float64 `json:"arrival_p99_ms"`
	AllP50     float64 `json:"all_routers_p50_ms"`
	AllP99     float64 `json:"all_routers_p99_ms"`
	// Ages of the summaries routers hold, sampled; StaleFraction of them past the TTL.
	AgeP50        float64 `json:"age_p50_ms"`
	AgeP99        float64 `json:"age_p99_ms"`
	StaleFraction float64 `json:"stale_fraction"`
	// SnapshotP50 and SnapshotP99 time a router's gossip Snapshot, which its cluster table reads
	// for every request (every summary held, copied and sorted).
	SnapshotP50 float64 `json:"snapshot_p50_us"`
	SnapshotP99 float64 `json:"snapshot_p99_us"`

	// HeapPerNode is the process's live heap growth divided by the nodes: what one node (a
	// router's gossip state among them) holds for a pool of this size.
	HeapPerNode float64 `json:"heap_bytes_per_node"`
	// CPUPerNode is the process's CPU seconds per second per node during the window (every
	// node's gossip, encryption and decoding, plus the harness), under whatever contention the
	// machine had (LoadAverage).
	CPUPerNode  float64 `json:"cpu_seconds_per_second_per_node"`
	LoadAverage string  `json:"load_average"`
	// LostPackets and OverflowedPackets are the simulated network's datagrams lost (Loss, or
	// sent to a node that had left) and dropped at a full receive queue, over the whole run.
	// Dilation is the time dilation this size ran with (Config.Dilation, DilatePer).
	Dilation          float64 `json:"dilation"`
	LostPackets       uint64  `json:"lost_packets,omitempty"`
	OverflowedPackets uint64  `json:"overflowed_packets,omitempty"`
}

// runSize starts a pool of n gateways, loads it, measures one window and stops it.
func runSize(ctx context.Context, cfg Config, n int, log io.Writer) Result {
	if cfg.DilatePer > 0 {
		cfg.Dilation = max(cfg.Dilation, float64(n)/float64(cfg.DilatePer))
	}
	res := Result{Gateways: n, Routers: cfg.Routers, LoadAverage: loadAverage(), Dilation: cfg.Dilation}
	progress := func(msg string) { fmt.Fprintf(log, "  N=%d: %s\n", n, msg) }
	ctx, cancel := context.WithTimeout(ctx, cfg.PerNTimeout)
	defer cancel()
	base := heapInUse()
	start := time.Now()
	var sim *simNet
	if cfg.Network == "sim" {
		sim = newSimNet(cfg.stretch(cfg.Latency), cfg.stretch(cfg.Jitter), cfg.Loss, uint64(n))
	}
	p, err := startPool(ctx, cfg, n, sim, progress)
	if err != nil {
		res.Stopped = stopReason(err)
		return res
	}
	defer p.stop()
	res.FormSeconds = time.Since(start).Seconds()
	progress(fmt.Sprintf("pool of %d formed in %.1fs; warming up %v", n+cfg.Routers, res.FormSeconds, cfg.Warmup))

	gws := make([]*gateway, n)
	busy := rand.New(rand.NewPCG(11, uint64(n))).Perm(n)[:int(cfg.Busy*float64(n)+0.5)]
	isBusy := make([]bool, n)
	for _, i := range busy {
		isBusy[i] = true
	}
	for i, node := range p.gateways {
		gws[i] = newGateway(cfg, i, node, isBusy[i])
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(loadCtx)
	g.Go(func() error { return runLoad(gctx, cfg, gws) })
	defer func() { stopLoad(); _ = g.Wait() }()

	select {
	case <-ctx.Done():
		res.Stopped = stopReason(ctx.Err())
		return res
	case <-time.After(cfg.stretch(cfg.Warmup)):
	}
	progress(fmt.Sprintf("measuring %v (%v of real time)", cfg.Window, cfg.stretch(cfg.Window)))
	nodes := p.all()
	before, routersBefore, cpuBefore, t0 := traffic(nodes), traffic(p.routers), cpuTime(), time.Now()
	w := measureWindow(gctx, cfg, gws, p.routers)
	after, routersAfter := traffic(nodes), traffic(p.routers)
	cpu, elapsed := cpuTime()-cpuBefore, time.Since(t0).Seconds()
	if err := ctx.Err(); err != nil {
		res.Stopped = stopReason(err)
		return res
	}
	if gctx.Err() != nil { // the load stopped early: its error says why
		stopLoad()
		res.Stopped = fmt.Sprintf("load: %v", g.Wait())
		return res
	}
	heap := heapInUse()
	res.HeapPerNode = float64(heap-min(base, heap)) / float64(len(nodes))
	// Rates are per second and times in milliseconds of the modelled (undilated) clock.
	modelled := elapsed / cfg.Dilation
	fill(&res, w, before, after, modelled, cfg.Dilation, len(nodes), n)
	res.SentPerRouter = float64(sent(routersAfter)-sent(routersBefore)) / float64(len(p.routers)) / modelled
	if sim != nil {
		res.LostPackets, res.OverflowedPackets = sim.lost.Load(), sim.overflowed.Load()
	}
	res.CPUPerNode = cpu.Seconds() / elapsed / float64(len(nodes))
	return res
}

func stopReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "per-size time limit reached"
	}
	return err.Error()
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, or "" where unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sent(s gossip.Stats) uint64     { return s.PacketBytesSent + s.StreamBytesSent }
func received(s gossip.Stats) uint64 { return s.PacketBytesReceived + s.StreamBytesReceived }

// fill sets the traffic and convergence figures of res from one window.
func fill(res *Result, w window, before, after gossip.Stats, elapsed, dilation float64, nodes, gateways int) {
	per := func(x uint64, by int) float64 { return float64(x) / float64(by) / elapsed }
	res.SentPerNode = per(sent(after)-sent(before), nodes)
	res.ReceivedPerNode = per(received(after)-received(before), nodes)
	res.OwnPerGateway = per(after.OwnBroadcastBytes-before.OwnBroadcastBytes, gateways)
	res.RelayedPerNode = per(after.RelayedBroadcastBytes-before.RelayedBroadcastBytes, nodes)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / dilation }
	res.Marks, res.Missed = w.marks, w.missed
	res.ArrivalP50, res.ArrivalP99 = ms(quantile(w.arrivals, 0.5)), ms(quantile(w.arrivals, 0.99))
	res.AllP50, res.AllP99 = ms(quantile(w.lasts, 0.5)), ms(quantile(w.lasts, 0.99))
	res.AgeP50, res.AgeP99 = ms(quantile(w.ages, 0.5)), ms(quantile(w.ages, 0.99))
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	res.SnapshotP50, res.SnapshotP99 = us(quantile(w.snapshots, 0.5)), us(quantile(w.snapshots, 0.99))
	if len(w.ages) > 0 {
		res.StaleFraction = float64(w.stale) / float64(len(w.ages))
	}
}
