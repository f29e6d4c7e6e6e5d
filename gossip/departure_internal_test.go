package gossip

import (
	"crypto/ed25519"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// authVerifier is a keyVerifier that also says which summaries it authenticated: the signed ones
// (a router in strict mode).
type authVerifier struct{ keyVerifier }

func (v *authVerifier) Authenticated(s *gossipv1.CapacitySummary) bool {
	return len(s.GetSignature()) > 0
}

var _ SummaryAuthenticator = (*authVerifier)(nil)

// forgeryFixture is a router holding a signed gateway's summary, and the gateway.
type forgeryFixture struct {
	clock      *fakeClock
	gw, router *Node
	held       *gossipv1.CapacitySummary
	rogue      ed25519.PrivateKey
}

func newForgeryFixture(
	t *testing.T,
	v SummaryVerifier,
	pub *ed25519.PublicKey,
	key ed25519.PrivateKey,
) *forgeryFixture {
	t.Helper()
	f := &forgeryFixture{clock: &fakeClock{now: time.Unix(1_700_000_000, 0)}, rogue: testKey(66)}
	f.gw = newIdentityNode(t, f.clock, key, nil, nil)
	f.router = newIdentityNode(t, f.clock, nil, v, nil)
	cur := deltaBase(1, 2, 1)
	cur.Node, cur.Sequence, cur.GeneratedAtUnixNano = "", 0, 0
	out, err := f.gw.Publish(cur)
	if err != nil {
		t.Fatal(err)
	}
	relayQueued(f.gw, f.router)
	f.held = out
	f.check(t, "before")
	return f
}

// check fails unless the router holds f.held, fresh.
func (f *forgeryFixture) check(t *testing.T, when string) {
	t.Helper()
	for _, s := range f.router.Snapshot() {
		if s.Node == "gw" {
			if !proto.Equal(s.Summary, f.held) || s.Stale {
				t.Fatalf(
					"%s: router holds sequence %d (want %d), stale %v",
					when,
					s.Summary.GetSequence(),
					f.held.GetSequence(),
					s.Stale,
				)
			}
			return
		}
	}
	t.Fatalf("%s: router holds nothing of gw", when)
}

// forgedSummary returns a newer summary of gw pointing at the forger, signed with the forger's key
// under the real key id.
func (f *forgeryFixture) forgedSummary(
	t *testing.T,
	after time.Duration,
	edit func(*gossipv1.CapacitySummary),
) *gossipv1.CapacitySummary {
	t.Helper()
	s := proto.CloneOf(f.held)
	s.Sequence += uint64(after)
	s.GeneratedAtUnixNano += int64(after)
	if edit != nil {
		edit(s)
	}
	id := s.GetSigningKeyId()
	if err := SignSummary(s, f.rogue); err != nil {
		t.Fatal(err)
	}
	s.SigningKeyId = id
	return s
}

func deltaMsg(t *testing.T, base, next *gossipv1.CapacitySummary) []byte {
	t.Helper()
	d := diffSummary(base, next)
	if d == nil {
		t.Fatal("no delta between the summaries")
	}
	blob, err := encodeDelta(d)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := encodeParts(msgDelta, "gw", next.GetSequence(), blob, 1400, true)
	if err != nil {
		t.Fatal(err)
	}
	return msgs[0]
}

// TestForgedMessagesCannotChangeARoutersView: a node holding the gossip key but not the cluster's
// signing key sends every kind of gossip message about a registered gateway. None changes what a
// router holds for it, or makes it stale: summaries, deltas and heartbeats fail the signature;
// push/pull state likewise; a leave, or memberlist declaring the gateway dead or left, is not
// trusted for an authenticated publisher (its summary ages out instead); metadata is not what
// routers route on; a full-summary request only makes the gateway send one.
func TestForgedMessagesCannotChangeARoutersView(t *testing.T) {
	key := testKey(5)
	pub := key.Public().(ed25519.PublicKey)
	tests := []struct {
		name    string
		deliver func(t *testing.T, f *forgeryFixture)
		reason  string // counted in summaries_rejected_total
	}{
		{"full summary with another gateway URL", func(t *testing.T, f *forgeryFixture) {
			s := f.forgedSummary(
				t,
				time.Millisecond,
				func(s *gossipv1.CapacitySummary) { s.GatewayUrl = "https://intruder.test" },
			)
			blob, _ := EncodeSummary(s)
			msgs, _ := encodeChunks("gw", s.GetSequence(), blob, 1400)
			f.router.handleChunk(msgs[0])
		}, RejectVerifier},
		{"delta claiming no capacity", func(t *testing.T, f *forgeryFixture) {
			f.router.handleChunk(deltaMsg(t, f.held, f.forgedSummary(t, 250*time.Millisecond, func(s *gossipv1.CapacitySummary) {
				s.Models[0].FreeKvTokens, s.Models[0].QueueDepth = 0, 500
			})))
		}, RejectVerifier},
		{"heartbeat delta", func(t *testing.T, f *forgeryFixture) {
			f.router.handleChunk(deltaMsg(t, f.held, f.forgedSummary(t, 1500*time.Millisecond, nil)))
		}, RejectVerifier},
		{"push/pull state", func(t *testing.T, f *forgeryFixture) {
			st, err := encodeState([]heldSummary{{summary: f.forgedSummary(t, time.Second, nil)}})
			if err != nil {
				t.Fatal(err)
			}
			(&delegate{n: f.router}).MergeRemoteState(st, false)
		}, RejectVerifier},
		{"leave", func(t *testing.T, f *forgeryFixture) {
			queued := f.router.queue.NumQueued()
			f.router.handleLeave(encodeLeave("gw", f.held.GetSequence()+1))
			if f.router.queue.NumQueued() != queued {
				t.Error("the forged leave was queued for relay")
			}
		}, RejectDeparture},
		{"leave from the future", func(t *testing.T, f *forgeryFixture) {
			f.router.handleLeave(encodeLeave("gw", ^uint64(0)))
		}, RejectClockSkew},
		{"member declared dead", func(t *testing.T, f *forgeryFixture) {
			(&delegate{n: f.router}).NotifyLeave(&memberlist.Node{Name: "gw", Addr: net.IPv4(127, 0, 0, 9), Port: 7946})
		}, RejectDeparture},
		{"member left after a leave", func(t *testing.T, f *forgeryFixture) {
			f.router.handleLeave(encodeLeave("gw", f.held.GetSequence()+1))
			(&delegate{n: f.router}).NotifyLeave(&memberlist.Node{Name: "gw", Addr: net.IPv4(127, 0, 0, 9), Port: 7946})
		}, RejectDeparture},
		{"metadata naming another URL and cluster", func(t *testing.T, f *forgeryFixture) {
			meta, err := encodeMetadata(Metadata{Role: RoleGateway, Cluster: "c9", Region: "r9", URL: "https://intruder.test"})
			if err != nil {
				t.Fatal(err)
			}
			(&delegate{n: f.router}).NotifyUpdate(
				&memberlist.Node{Name: "gw", Addr: net.IPv4(127, 0, 0, 9), Port: 7946, Meta: meta},
			)
		}, ""},
		{"full-summary request", func(t *testing.T, f *forgeryFixture) {
			f.router.handleWantFull(encodeWantFull("gw"))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &authVerifier{}
			v.pub.Store(&pub)
			f := newForgeryFixture(t, v, &pub, key)
			tt.deliver(t, f)
			f.check(t, "after")
			if tt.reason != "" {
				if n := testutil.ToFloat64(f.router.metrics.rejected.WithLabelValues(tt.reason)); n < 1 {
					t.Errorf("rejected{%s} = %v, want it counted", tt.reason, n)
				}
			}
			// The real gateway's next summary still applies.
			f.clock.Advance(250 * time.Millisecond)
			cur := proto.CloneOf(f.held)
			cur.Node, cur.Sequence, cur.GeneratedAtUnixNano, cur.Signature, cur.SigningKeyId = "", 0, 0, nil, ""
			cur.Models[0].QueueDepth++
			out, err := f.gw.Publish(cur)
			if err != nil {
				t.Fatal(err)
			}
			relayQueued(f.gw, f.router)
			f.held = out
			f.check(t, "the real gateway's next summary")
		})
	}
}

// TestUntrustedDepartureAgesOut: a departure claim about an authenticated publisher leaves its
// summary fresh until SummaryTTL has passed without a newer one; about a publisher the verifier
// did not authenticate (no verifier, or compatibility mode) it makes the summary stale at once.
func TestUntrustedDepartureAgesOut(t *testing.T) {
	key := testKey(6)
	pub := key.Public().(ed25519.PublicKey)
	auth := &authVerifier{}
	auth.pub.Store(&pub)
	plain := &keyVerifier{}
	plain.pub.Store(&pub)
	for _, tt := range []struct {
		name        string
		v           SummaryVerifier
		staleAtOnce bool
	}{
		{"authenticated", auth, false},
		{"not authenticated", plain, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newForgeryFixture(t, tt.v, &pub, key)
			(&delegate{n: f.router}).NotifyLeave(&memberlist.Node{Name: "gw", Addr: net.IPv4(127, 0, 0, 9), Port: 7946})
			stale := func() bool {
				f.router.sweep()
				for _, s := range f.router.Snapshot() {
					if s.Node == "gw" {
						return s.Stale
					}
				}
				return true
			}
			if got := stale(); got != tt.staleAtOnce {
				t.Fatalf("stale right after the departure = %v, want %v", got, tt.staleAtOnce)
			}
			f.clock.Advance(f.router.cfg.SummaryTTL + time.Second)
			if !stale() {
				t.Fatal("summary still fresh a TTL after its publisher went silent")
			}
		})
	}
}
