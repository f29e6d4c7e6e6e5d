package dnssync

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// ErrInvalid marks an invalid configuration; the message names the field.
var ErrInvalid = errors.New("dnssync: invalid config")

// Record types the sync manages.
const (
	TypeA     = "A"
	TypeAAAA  = "AAAA"
	TypeCNAME = "CNAME"
)

// Config configures the DNS sync. Bootstrap settings: they come from the router's flags or a
// file, not from etcd. Drains come from etcd.
type Config struct {
	// HostedZoneID is the Route 53 hosted zone holding RecordName, e.g. "Z0123456789ABC"
	// (a "/hostedzone/" prefix is accepted). Required.
	HostedZoneID string
	// RecordName is the regional name clients resolve, e.g. "api.example.com". Required.
	RecordName string
	// RecordType is A, AAAA or CNAME. Default A. An alias record (Target.AliasDNSName) has type
	// A or AAAA.
	RecordType string
	// TTL of non-alias records. Default 60 s; whole seconds.
	TTL time.Duration
	// Targets maps each region the sync owns (its SetIdentifier) to its router load balancer.
	// At least one is required.
	Targets map[string]Target
	// Period between reconciliations besides those a config change or a new leadership
	// triggers. Default 60 s.
	Period time.Duration
	// LeaderPoll is how often leadership is checked, so a new leader reconciles at once.
	// Default 1 s.
	LeaderPoll time.Duration
	// RetryMin is the first pause after a failed reconciliation; it doubles (four-fold after a
	// throttling error) up to RetryMax. Defaults 1 s and 2 min.
	RetryMin, RetryMax time.Duration
	// CallTimeout bounds one reconciliation's Route 53 calls. Default 30 s.
	CallTimeout time.Duration
}

// Target is one region's latency record: either Values or an alias to a load balancer.
type Target struct {
	// AWSRegion is the record's latency region. Default: the region's own name.
	AWSRegion string
	// Values are the record's values: IPv4 addresses for A, IPv6 for AAAA, one host name for CNAME.
	Values []string
	// AliasDNSName and AliasHostedZoneID make an alias record to a load balancer (its DNS name and
	// its canonical hosted zone id); then Values must be empty and TTL is not used.
	AliasDNSName, AliasHostedZoneID string
	// EvaluateTargetHealth makes an alias record follow the load balancer's health.
	EvaluateTargetHealth bool
	// HealthCheckID is an optional Route 53 health check (e.g. on the routers' /readyz).
	HealthCheckID string
}

// DefaultConfig returns the defaults documented on Config, with no zone, name or targets.
func DefaultConfig() Config {
	return Config{
		RecordType:  TypeA,
		TTL:         60 * time.Second,
		Period:      60 * time.Second,
		LeaderPoll:  time.Second,
		RetryMin:    time.Second,
		RetryMax:    2 * time.Minute,
		CallTimeout: 30 * time.Second,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case strings.TrimPrefix(c.HostedZoneID, "/hostedzone/") == "":
		return fmt.Errorf("%w: HostedZoneID is required", ErrInvalid)
	case strings.Trim(c.RecordName, ".") == "":
		return fmt.Errorf("%w: RecordName is required", ErrInvalid)
	case c.RecordType != TypeA && c.RecordType != TypeAAAA && c.RecordType != TypeCNAME:
		return fmt.Errorf("%w: RecordType %q must be A, AAAA or CNAME", ErrInvalid, c.RecordType)
	case c.TTL < time.Second || c.TTL%time.Second != 0:
		return fmt.Errorf("%w: TTL %s must be whole seconds, at least 1s", ErrInvalid, c.TTL)
	case len(c.Targets) == 0:
		return fmt.Errorf("%w: Targets is empty", ErrInvalid)
	case c.Period <= 0 || c.LeaderPoll <= 0 || c.CallTimeout <= 0:
		return fmt.Errorf("%w: Period, LeaderPoll and CallTimeout must be positive", ErrInvalid)
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return fmt.Errorf("%w: RetryMin must be positive and at most RetryMax", ErrInvalid)
	}
	for _, region := range slices.Sorted(maps.Keys(c.Targets)) {
		if err := c.validateTarget(region, c.Targets[region]); err != nil {
			return err
		}
	}
	return nil
}

// validateTarget checks one region's target against the record type.
func (c Config) validateTarget(region string, t Target) error {
	alias := t.AliasDNSName != "" || t.AliasHostedZoneID != ""
	switch {
	case region == "" || strings.ContainsAny(region, " \t\n"):
		return fmt.Errorf("%w: Targets: region %q is not a valid set identifier", ErrInvalid, region)
	case alias && (t.AliasDNSName == "" || t.AliasHostedZoneID == "" || len(t.Values) > 0):
		return fmt.Errorf(
			"%w: Targets[%s]: an alias needs AliasDNSName and AliasHostedZoneID and no Values",
			ErrInvalid,
			region,
		)
	case alias && c.RecordType == TypeCNAME:
		return fmt.Errorf("%w: Targets[%s]: an alias record must be of type A or AAAA", ErrInvalid, region)
	case !alias && len(t.Values) == 0:
		return fmt.Errorf("%w: Targets[%s]: needs Values or an alias", ErrInvalid, region)
	case c.RecordType == TypeCNAME && len(t.Values) != 1:
		return fmt.Errorf("%w: Targets[%s]: a CNAME has exactly one value", ErrInvalid, region)
	}
	for _, v := range t.Values {
		if err := checkValue(c.RecordType, v); err != nil {
			return fmt.Errorf("%w: Targets[%s]: %v", ErrInvalid, region, err)
		}
	}
	return nil
}

// checkValue checks one record value against the record type.
func checkValue(typ, v string) error {
	if typ == TypeCNAME {
		if strings.Trim(v, ".") == "" || strings.ContainsAny(v, " \t\n") {
			return fmt.Errorf("CNAME value %q is not a host name", v)
		}
		return nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil || (typ == TypeA) != a.Is4() {
		return fmt.Errorf("value %q is not an address of type %s", v, typ)
	}
	return nil
}

// awsRegion is the latency region of region's record.
func (t Target) awsRegion(region string) string {
	if t.AWSRegion != "" {
		return t.AWSRegion
	}
	return region
}
