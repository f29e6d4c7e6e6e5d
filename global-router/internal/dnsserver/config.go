package dnsserver

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// ErrInvalid marks an invalid configuration; the message names the field.
var ErrInvalid = errors.New("dnsserver: invalid config")

// Config configures the responder. Bootstrap settings: they come from the router's flags or a file.
type Config struct {
	// Listen is the UDP and TCP address (--dns-listen), e.g. "127.0.0.1:5353". Used by Run.
	Listen string
	// Zone is the zone the responder is authoritative for, e.g. "switchyard.test". Required.
	Zone string
	// Name is the regional name answered with router addresses. Default "api." + Zone.
	Name string
	// TTL of the answers, short so clients follow drains and failures quickly. Default 5 s.
	TTL time.Duration
	// Regions maps each region to its routers' addresses. At least one region is required and
	// every region needs an IPv4 address; AAAA queries are answered when IPv6 ones are given.
	Regions map[string]Region
	// ClientRegions maps client source networks to the region they are in, e.g.
	// 127.0.0.0/8 -> us-east-1 for the local stack. The longest matching prefix wins.
	ClientRegions map[netip.Prefix]string
	// UseClientSubnet lets a resolver's EDNS client subnet option place a client whose source
	// address matches no ClientRegions entry. Default true.
	UseClientSubnet bool
	// DefaultRegion is the region of clients placed by neither. Required.
	DefaultRegion string
	// RTT holds round-trip times between regions (from -> to); one direction is enough. A region
	// with no RTT from the client's region is tried after all those with one.
	RTT map[string]map[string]time.Duration
}

// Region holds one region's router addresses.
type Region struct {
	// IPv4 addresses answered to A queries.
	IPv4 []netip.Addr
	// IPv6 addresses answered to AAAA queries (optional).
	IPv6 []netip.Addr
}

// DefaultConfig returns the defaults documented on Config, with no zone or regions.
func DefaultConfig() Config {
	return Config{TTL: 5 * time.Second, UseClientSubnet: true}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	zone, name := dns.Fqdn(strings.ToLower(c.Zone)), dns.Fqdn(strings.ToLower(c.name()))
	switch {
	case c.Listen != "" && !validHostPort(c.Listen):
		return fmt.Errorf("%w: Listen %q is not host:port", ErrInvalid, c.Listen)
	case zone == "." || !validName(zone):
		return fmt.Errorf("%w: Zone %q is not a domain name", ErrInvalid, c.Zone)
	case !validName(name) || !dns.IsSubDomain(zone, name):
		return fmt.Errorf("%w: Name %q is not a name inside Zone %q", ErrInvalid, c.name(), c.Zone)
	case c.TTL < time.Second || c.TTL%time.Second != 0:
		return fmt.Errorf("%w: TTL %s must be whole seconds, at least 1s", ErrInvalid, c.TTL)
	case len(c.Regions) == 0:
		return fmt.Errorf("%w: Regions is empty", ErrInvalid)
	case !c.hasRegion(c.DefaultRegion):
		return fmt.Errorf("%w: DefaultRegion %q is not in Regions", ErrInvalid, c.DefaultRegion)
	}
	for _, r := range slices.Sorted(maps.Keys(c.Regions)) {
		if err := c.Regions[r].validate(r); err != nil {
			return err
		}
	}
	for p, r := range c.ClientRegions {
		if !p.IsValid() || !c.hasRegion(r) {
			return fmt.Errorf("%w: ClientRegions[%s] = %q: invalid prefix or region not in Regions", ErrInvalid, p, r)
		}
	}
	for from, m := range c.RTT {
		for to, d := range m {
			if !c.hasRegion(from) || !c.hasRegion(to) || d < 0 {
				return fmt.Errorf("%w: RTT[%s][%s] = %s: unknown region or negative", ErrInvalid, from, to, d)
			}
		}
	}
	return nil
}

func (r Region) validate(name string) error {
	if len(r.IPv4) == 0 {
		return fmt.Errorf("%w: Regions[%s] has no IPv4 address", ErrInvalid, name)
	}
	for _, a := range r.IPv4 {
		if !a.Is4() {
			return fmt.Errorf("%w: Regions[%s].IPv4: %s is not IPv4", ErrInvalid, name, a)
		}
	}
	for _, a := range r.IPv6 {
		if !a.Is6() || a.Is4In6() {
			return fmt.Errorf("%w: Regions[%s].IPv6: %s is not IPv6", ErrInvalid, name, a)
		}
	}
	return nil
}

func (c Config) name() string {
	if c.Name != "" {
		return c.Name
	}
	return "api." + strings.TrimSuffix(c.Zone, ".")
}

func (c Config) hasRegion(r string) bool {
	_, ok := c.Regions[r]
	return ok
}

func validName(n string) bool {
	_, ok := dns.IsDomainName(n)
	return ok && !strings.ContainsAny(n, " \t\n")
}

func validHostPort(addr string) bool {
	_, _, err := net.SplitHostPort(addr)
	return err == nil
}

// rtt returns the round-trip time between two regions, in either direction; ok is false when
// none is configured.
func (c Config) rtt(from, to string) (time.Duration, bool) {
	if from == to {
		return 0, true
	}
	if d, ok := c.RTT[from][to]; ok {
		return d, true
	}
	d, ok := c.RTT[to][from]
	return d, ok
}

// preferences returns, for every region, all regions from nearest to farthest: the region
// itself, then by RTT, regions without one last, ties by name.
func (c Config) preferences() map[string][]string {
	names := slices.Sorted(maps.Keys(c.Regions))
	out := make(map[string][]string, len(names))
	for _, from := range names {
		order := slices.Clone(names)
		slices.SortStableFunc(order, func(a, b string) int {
			if a == from || b == from {
				return cmp.Compare(b2i(b == from), b2i(a == from))
			}
			da, oka := c.rtt(from, a)
			db, okb := c.rtt(from, b)
			if oka != okb {
				if oka {
					return -1
				}
				return 1
			}
			return cmp.Compare(da, db)
		})
		out[from] = order
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
