// Package vivaldi implements Vivaldi network coordinates (Dabek et al., SIGCOMM 2004): each node
// places itself in a low-dimensional Euclidean space plus a height (its access-link delay) so that
// the distance between two coordinates estimates the round-trip time between the nodes. A node
// refines its coordinate from every measured RTT to a peer whose coordinate it has learned.
package vivaldi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Dimensions is the number of Euclidean dimensions of a coordinate.
const Dimensions = 8

// Tuning constants of the algorithm.
const (
	errorCeiling  = 1.5   // initial and largest error estimate
	errorGain     = 0.25  // c_e: weight of a new sample in the error estimate
	positionGain  = 0.25  // c_c: fraction of the force applied per sample
	minHeight     = 10e-6 // seconds; heights never reach zero
	maxRTTSeconds = 10.0  // samples above this are discarded as bogus
	encodedSize   = 2 + 8*(Dimensions+2)
	zeroThreshold = 1.0e-12 // below this two coordinates are treated as equal
)

// ErrInvalid reports an encoded coordinate that cannot be decoded.
var ErrInvalid = errors.New("vivaldi: invalid coordinate")

// Coordinate is a position in the Vivaldi space. Distances are in seconds.
type Coordinate struct {
	Vec    [Dimensions]float64
	Height float64
	Error  float64
}

// NewCoordinate returns the origin with the largest error: a node that knows nothing yet.
func NewCoordinate() Coordinate {
	return Coordinate{Height: minHeight, Error: errorCeiling}
}

// DistanceTo returns the estimated round-trip time between c and o.
func (c Coordinate) DistanceTo(o Coordinate) time.Duration {
	d := c.rawDistance(o)
	return time.Duration(d * float64(time.Second))
}

func (c Coordinate) rawDistance(o Coordinate) float64 {
	var sum float64
	for i := range c.Vec {
		d := c.Vec[i] - o.Vec[i]
		sum += d * d
	}
	return math.Sqrt(sum) + c.Height + o.Height
}

// valid reports whether every component is a finite number in a plausible range.
func (c Coordinate) valid() bool {
	for _, v := range c.Vec {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e6 {
			return false
		}
	}
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= 1e6 }
	return ok(c.Height) && ok(c.Error)
}

// MarshalBinary encodes the coordinate compactly: a version byte, the dimension count, then the
// vector, height and error as little-endian float64.
func (c Coordinate) MarshalBinary() ([]byte, error) {
	b := make([]byte, 2, encodedSize)
	b[0], b[1] = 1, Dimensions
	for _, v := range c.Vec {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Height))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Error))
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary produced, rejecting anything else.
func (c *Coordinate) UnmarshalBinary(b []byte) error {
	if len(b) != encodedSize || b[0] != 1 || b[1] != Dimensions {
		return fmt.Errorf("%w: %d bytes", ErrInvalid, len(b))
	}
	var out Coordinate
	p := b[2:]
	next := func() float64 {
		v := math.Float64frombits(binary.LittleEndian.Uint64(p))
		p = p[8:]
		return v
	}
	for i := range out.Vec {
		out.Vec[i] = next()
	}
	out.Height, out.Error = next(), next()
	if !out.valid() {
		return fmt.Errorf("%w: out of range", ErrInvalid)
	}
	*c = out
	return nil
}

// Client holds a node's own coordinate and updates it from RTT samples. It is safe for concurrent use.
type Client struct {
	mu   sync.Mutex
	self Coordinate
}

// NewClient returns a client at the origin.
func NewClient() *Client {
	return &Client{self: NewCoordinate()}
}

// Coordinate returns the node's current coordinate.
func (c *Client) Coordinate() Coordinate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.self
}

// Update moves the node's coordinate after measuring rtt to a peer at coordinate other. Samples that
// are not positive or exceed ten seconds, and invalid peer coordinates, are ignored.
func (c *Client) Update(other Coordinate, rtt time.Duration) {
	r := rtt.Seconds()
	if r <= 0 || r > maxRTTSeconds || !other.valid() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := step(c.self, other, r)
	if next.valid() {
		c.self = next
	}
}

// step applies one Vivaldi update of self towards or away from other for a measured rtt (seconds).
func step(self, other Coordinate, rtt float64) Coordinate {
	dist := self.rawDistance(other)
	w := self.Error / math.Max(self.Error+other.Error, zeroThreshold)
	relErr := math.Abs(dist-rtt) / rtt
	self.Error = math.Min(relErr*errorGain*w+self.Error*(1-errorGain*w), errorCeiling)
	force := positionGain * w * (rtt - dist)
	unit, mag := direction(self, other)
	for i := range self.Vec {
		self.Vec[i] += unit[i] * force
	}
	if mag > zeroThreshold {
		self.Height += (self.Height + other.Height) * force / mag
	}
	self.Height = math.Max(self.Height, minHeight)
	return self
}

// direction returns the unit vector from other to self and the magnitude of the difference
// including heights. Coincident nodes are pushed apart in a direction derived from their vectors.
func direction(self, other Coordinate) (unit [Dimensions]float64, mag float64) {
	var sum float64
	for i := range unit {
		unit[i] = self.Vec[i] - other.Vec[i]
		sum += unit[i] * unit[i]
	}
	norm := math.Sqrt(sum)
	if norm < zeroThreshold {
		// Deterministic but asymmetric: each coincident pair separates along one axis.
		unit = [Dimensions]float64{}
		unit[int(math.Float64bits(self.Error+other.Height))%Dimensions] = 1
		return unit, self.Height + other.Height
	}
	for i := range unit {
		unit[i] /= norm
	}
	return unit, norm + self.Height + other.Height
}
