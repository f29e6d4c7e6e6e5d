package gossip

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Region digests (see RegionDigest in the gossip proto and docs/scale.md). An aggregator, a
// router that is a member of its region's pool and of the pool of aggregators, publishes its
// region's clusters as one digest message; remote regions' aggregators relay it into their own
// pools, where every router merges the digest's clusters into its view. A digest is signed with
// the region's Ed25519 key (the gateways' summary signatures do not survive aggregation): the
// signed bytes are digestSigningDomain followed by the digest's deterministic encoding with the
// signature field cleared, as for summaries.

// DigestSchemaVersion is the RegionDigest schema this package writes.
const DigestSchemaVersion = 1

// digestSigningDomain separates digest signatures from summary signatures made with the same key.
const digestSigningDomain = "switchyard.gossip.v1.RegionDigest\x00"

// Limits of a digest, checked when one is decoded.
const (
	// MaxDigestClusters is the most clusters one digest lists.
	MaxDigestClusters = 4096
	// maxDigestURLs is the most gateway URLs one digest cluster lists.
	maxDigestURLs = 16
	// maxDigestModels is the most models one digest cluster lists.
	maxDigestModels = 1024
	// maxDigestName bounds cluster, region and model names and URLs in a digest.
	maxDigestName = 2048
)

// Errors of digest verification.
var (
	// ErrDigestUnsigned reports a digest that carries no signature.
	ErrDigestUnsigned = errors.New("gossip: digest is not signed")
	// ErrDigestBadSignature reports a digest signature that the key does not verify.
	ErrDigestBadSignature = errors.New("gossip: digest signature does not verify")
)

// digestSignatureField is RegionDigest.signature's field number.
var digestSignatureField = (&gossipv1.RegionDigest{}).ProtoReflect().Descriptor().Fields().
	ByName("signature").Number()

// EncodeDigest encodes a digest as a blob (codec byte + protobuf), compressed when smaller.
func EncodeDigest(d *gossipv1.RegionDigest) ([]byte, error) { return encodeBlob(d) }

// DecodeDigest decodes a blob made by EncodeDigest, refusing anything that inflates beyond limit
// bytes or is not a well-formed digest (checkDigest).
func DecodeDigest(b []byte, limit int) (*gossipv1.RegionDigest, error) {
	d := new(gossipv1.RegionDigest)
	if err := decodeBlob(b, d, limit); err != nil {
		return nil, err
	}
	if err := checkDigest(d); err != nil {
		return nil, err
	}
	return d, nil
}

// checkDigest reports a digest that no aggregator writes: no origin, region or sequence, a base
// not below the sequence, too many or unnamed or repeated clusters, removals in a full digest.
func checkDigest(d *gossipv1.RegionDigest) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: digest: %s", ErrMalformed, fmt.Sprintf(format, a...))
	}
	switch {
	case d.GetOrigin() == "" || len(d.GetOrigin()) > maxNodeName:
		return bad("origin %q", d.GetOrigin())
	case d.GetRegion() == "" || len(d.GetRegion()) > maxDigestName:
		return bad("region of %d bytes", len(d.GetRegion()))
	case d.GetSequence() == 0 || d.GetBaseSequence() >= d.GetSequence():
		return bad("sequence %d, base %d", d.GetSequence(), d.GetBaseSequence())
	case len(d.GetClusters())+len(d.GetRemoved()) > MaxDigestClusters:
		return bad("%d clusters, limit %d", len(d.GetClusters())+len(d.GetRemoved()), MaxDigestClusters)
	case d.GetBaseSequence() == 0 && len(d.GetRemoved()) > 0:
		return bad("a full digest with removals")
	}
	seen := make(map[string]bool, len(d.GetClusters())+len(d.GetRemoved()))
	for _, c := range d.GetClusters() {
		if err := checkDigestCluster(c); err != nil {
			return bad("cluster %q: %v", c.GetCluster(), err)
		}
		if seen[c.GetCluster()] {
			return bad("cluster %q listed twice", c.GetCluster())
		}
		seen[c.GetCluster()] = true
	}
	for _, name := range d.GetRemoved() {
		if name == "" || len(name) > maxDigestName || seen[name] {
			return bad("removed cluster %q empty, too long, or listed twice", name)
		}
		seen[name] = true
	}
	return nil
}

func checkDigestCluster(c *gossipv1.DigestCluster) error {
	switch {
	case c.GetCluster() == "" || len(c.GetCluster()) > maxDigestName:
		return errors.New("no name, or too long")
	case len(c.GetGatewayUrls()) == 0 || len(c.GetGatewayUrls()) > maxDigestURLs:
		return fmt.Errorf("%d gateway URLs, want 1 to %d", len(c.GetGatewayUrls()), maxDigestURLs)
	case len(c.GetModels()) > maxDigestModels:
		return fmt.Errorf("%d models, limit %d", len(c.GetModels()), maxDigestModels)
	case len(c.GetNode()) > maxNodeName:
		return errors.New("node name too long")
	}
	for _, u := range c.GetGatewayUrls() {
		if u == "" || len(u) > maxDigestName {
			return errors.New("empty or long gateway URL")
		}
	}
	for _, m := range c.GetModels() {
		if m.GetName() == "" || len(m.GetName()) > maxDigestName {
			return errors.New("unnamed or long model name")
		}
	}
	return nil
}

// digestSignedBytes returns the bytes a digest's signature covers. d is not modified.
func digestSignedBytes(d *gossipv1.RegionDigest) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("gossip: encode digest for signing: %w", err)
	}
	return withoutField(digestSigningDomain, raw, digestSignatureField)
}

// withoutField returns domain followed by the protobuf encoding raw without field num.
func withoutField(domain string, raw []byte, num protowire.Number) ([]byte, error) {
	out := make([]byte, 0, len(domain)+len(raw))
	out = append(out, domain...)
	for len(raw) > 0 {
		f, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return nil, fmt.Errorf("gossip: encode for signing: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(f, typ, raw[n:])
		if m < 0 {
			return nil, fmt.Errorf("gossip: encode for signing: %w", protowire.ParseError(m))
		}
		if f != num {
			out = append(out, raw[:n+m]...)
		}
		raw = raw[n+m:]
	}
	return out, nil
}

// SignDigest sets d's signing key id and signature with key. It modifies d.
func SignDigest(d *gossipv1.RegionDigest, key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("gossip: signing key is %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	d.SigningKeyId = KeyID(key.Public().(ed25519.PublicKey))
	d.Signature = nil
	b, err := digestSignedBytes(d)
	if err != nil {
		return err
	}
	d.Signature = ed25519.Sign(key, b)
	return nil
}

// VerifyDigest checks d's signature with pub: ErrDigestUnsigned when it has none,
// ErrDigestBadSignature when pub does not verify it. It does not check that pub is the key d's
// signing key id names. d is not modified.
func VerifyDigest(d *gossipv1.RegionDigest, pub ed25519.PublicKey) error {
	if len(d.GetSignature()) == 0 {
		return ErrDigestUnsigned
	}
	if len(pub) != ed25519.PublicKeySize || len(d.GetSignature()) != ed25519.SignatureSize {
		return ErrDigestBadSignature
	}
	b, err := digestSignedBytes(d)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, b, d.GetSignature()) {
		return ErrDigestBadSignature
	}
	return nil
}

// rebuildDigest returns the state that delta, against base, describes: base's clusters with the
// delta's replacing or adding to them and its removals dropped, ordered by name, under the
// delta's header. Neither is modified; the result shares their clusters.
func rebuildDigest(base, delta *gossipv1.RegionDigest) *gossipv1.RegionDigest {
	byName := make(map[string]*gossipv1.DigestCluster, len(base.GetClusters())+len(delta.GetClusters()))
	for _, c := range base.GetClusters() {
		byName[c.GetCluster()] = c
	}
	for _, c := range delta.GetClusters() {
		byName[c.GetCluster()] = c
	}
	for _, name := range delta.GetRemoved() {
		delete(byName, name)
	}
	out := &gossipv1.RegionDigest{
		SchemaVersion: delta.GetSchemaVersion(), Region: delta.GetRegion(), Origin: delta.GetOrigin(),
		Sequence: delta.GetSequence(), GeneratedAtUnixNano: delta.GetGeneratedAtUnixNano(),
		BaseSequence: delta.GetBaseSequence(), SigningKeyId: delta.GetSigningKeyId(),
		Clusters: make([]*gossipv1.DigestCluster, 0, len(byName)),
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out.Clusters = append(out.Clusters, byName[name])
	}
	return out
}
