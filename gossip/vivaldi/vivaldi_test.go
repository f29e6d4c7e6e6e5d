package vivaldi_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/gossip/vivaldi"
)

// TestConvergesOnGrid simulates nodes in two "regions" with known RTTs and checks that the
// coordinates predict those RTTs after a few hundred rounds of samples.
func TestConvergesOnGrid(t *testing.T) {
	const n = 8
	rtt := func(i, j int) time.Duration {
		if (i < n/2) == (j < n/2) {
			return 2 * time.Millisecond
		}
		return 80 * time.Millisecond
	}
	clients := make([]*vivaldi.Client, n)
	for i := range clients {
		clients[i] = vivaldi.NewClient()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 400; round++ {
		for i := range clients {
			j := rng.IntN(n)
			if j == i {
				continue
			}
			clients[i].Update(clients[j].Coordinate(), rtt(i, j))
		}
	}
	tests := []struct {
		name string
		i, j int
	}{
		{"same region", 0, 1},
		{"other region", 0, n - 1},
		{"other region reversed", n - 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := rtt(tt.i, tt.j)
			got := clients[tt.i].Coordinate().DistanceTo(clients[tt.j].Coordinate())
			if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.5 {
				t.Errorf("estimate %v, true RTT %v", got, want)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	c := vivaldi.NewClient()
	c.Update(vivaldi.NewCoordinate(), 5*time.Millisecond)
	want := c.Coordinate()
	b, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got vivaldi.Coordinate
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("round trip: got %+v want %+v", got, want)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	good, _ := vivaldi.NewCoordinate().MarshalBinary()
	nan := append([]byte(nil), good...)
	for i := 2; i < 10; i++ {
		nan[i] = 0xff
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", good[:10]},
		{"wrong version", append([]byte{9}, good[1:]...)},
		{"NaN component", nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c vivaldi.Coordinate
			if err := c.UnmarshalBinary(tt.b); !errors.Is(err, vivaldi.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestUpdateIgnoresBogusSamples(t *testing.T) {
	c := vivaldi.NewClient()
	before := c.Coordinate()
	c.Update(vivaldi.NewCoordinate(), 0)
	c.Update(vivaldi.NewCoordinate(), time.Minute)
	if c.Coordinate() != before {
		t.Error("bogus samples moved the coordinate")
	}
}

func FuzzUnmarshal(f *testing.F) {
	good, _ := vivaldi.NewCoordinate().MarshalBinary()
	f.Add(good)
	f.Add([]byte{1, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		var c vivaldi.Coordinate
		if err := c.UnmarshalBinary(b); err != nil {
			return
		}
		_ = c.DistanceTo(vivaldi.NewCoordinate())
	})
}
