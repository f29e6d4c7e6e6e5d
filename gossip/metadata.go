package gossip

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxMetadataBytes is the largest encoded node metadata (memberlist's limit is 512 bytes).
const MaxMetadataBytes = 512

// metadataVersion is the encoding version this package writes. Readers accept higher versions as
// long as they start with the version-1 fields; anything after those is ignored. Version 2 appends
// a byte of feature flags.
const metadataVersion = 2

// features are what a node's gossip code understands beyond the version-1 protocol; a node
// advertises them in its metadata (version 2 on) so that publishers send what every member reads.
type features byte

// featureCompactDeltas: the node reads deltas with the compact header and figure masks.
const featureCompactDeltas features = 1 << 0

// featureSchema2Figures: the node's figure masks may name the ModelCapacity fields of schema
// version 2 (mean_predicted_ttft_ms). A reader without it refuses a mask naming a field it does not
// know, but keeps that field when it comes inside a model's figures.
const featureSchema2Figures features = 1 << 1

// featureSignedDeltas: the node reads deltas that carry a signature (SummaryDelta.signature). A
// reader without it refuses them as carrying an unknown field, so publishers that sign send full
// summaries only while such a member is alive.
const featureSignedDeltas features = 1 << 2

// featureLinkedChunks: the node reads linked chunks (msgLinked, msgLinkedDelta). A reader without
// it drops them as undecodable, so publishers cut messages into linked chunks only while every
// alive member advertises it.
const featureLinkedChunks features = 1 << 3

// ownFeatures are the features this package implements.
const ownFeatures = featureCompactDeltas | featureSchema2Figures | featureSignedDeltas | featureLinkedChunks

// deltaFeatures are the features a reader needs for the deltas this package writes; while a
// member lacks one, publishers write their deltas as the first deltas were (legacyDelta).
const deltaFeatures = featureCompactDeltas | featureSchema2Figures

// ErrInvalidMetadata reports node metadata that cannot be decoded.
var ErrInvalidMetadata = errors.New("gossip: invalid node metadata")

// Metadata describes a node to its peers. It travels with memberlist's alive messages.
type Metadata struct {
	// Role is RoleGateway or RoleRouter.
	Role Role
	// Cluster is the cluster a gateway serves; routers may leave it empty.
	Cluster string
	// Region is the node's region.
	Region string
	// URL is the advertised URL of the node's HTTP front door.
	URL string
	// Version is the node's software version.
	Version string
}

// roleCodes maps roles to their one-byte wire codes.
var roleCodes = map[Role]byte{RoleGateway: 1, RoleRouter: 2}

// encodeMetadata writes: version byte, role byte, then cluster, region, URL and version, each as a
// one-byte length followed by UTF-8 bytes, then the feature byte (ownFeatures).
func encodeMetadata(m Metadata) ([]byte, error) {
	role, ok := roleCodes[m.Role]
	if !ok {
		return nil, fmt.Errorf("%w: role %q", ErrInvalidMetadata, m.Role)
	}
	b := make([]byte, 0, 6+len(m.Cluster)+len(m.Region)+len(m.URL)+len(m.Version))
	b = append(b, metadataVersion, role)
	for _, s := range []string{m.Cluster, m.Region, m.URL, m.Version} {
		if len(s) > 255 || !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: field %.20q is longer than 255 bytes or not UTF-8", ErrInvalidMetadata, s)
		}
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	b = append(b, byte(ownFeatures))
	if len(b) > MaxMetadataBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidMetadata, len(b), MaxMetadataBytes)
	}
	return b, nil
}

// DecodeMetadata parses node metadata received from a peer, validating every field.
func DecodeMetadata(b []byte) (Metadata, error) {
	m, _, err := decodeMetadata(b)
	return m, err
}

// decodeMetadata parses node metadata and the features it advertises (none before version 2).
func decodeMetadata(b []byte) (Metadata, features, error) {
	if len(b) > MaxMetadataBytes {
		return Metadata{}, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidMetadata, len(b), MaxMetadataBytes)
	}
	if len(b) < 2 || b[0] == 0 {
		return Metadata{}, 0, fmt.Errorf("%w: missing header", ErrInvalidMetadata)
	}
	var m Metadata
	switch b[1] {
	case roleCodes[RoleGateway]:
		m.Role = RoleGateway
	case roleCodes[RoleRouter]:
		m.Role = RoleRouter
	default:
		return Metadata{}, 0, fmt.Errorf("%w: role code %d", ErrInvalidMetadata, b[1])
	}
	rest := b[2:]
	for _, dst := range []*string{&m.Cluster, &m.Region, &m.URL, &m.Version} {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return Metadata{}, 0, fmt.Errorf("%w: truncated", ErrInvalidMetadata)
		}
		s := string(rest[1 : 1+int(rest[0])])
		if !utf8.ValidString(s) {
			return Metadata{}, 0, fmt.Errorf("%w: field is not UTF-8", ErrInvalidMetadata)
		}
		*dst, rest = s, rest[1+int(rest[0]):]
	}
	switch {
	case b[0] == 1 && len(rest) > 0:
		return Metadata{}, 0, fmt.Errorf("%w: %d trailing bytes", ErrInvalidMetadata, len(rest))
	case b[0] == 2 && len(rest) != 1:
		return Metadata{}, 0, fmt.Errorf(
			"%w: version 2 with %d bytes after the fields, want the feature byte",
			ErrInvalidMetadata,
			len(rest),
		)
	case b[0] >= 2 && len(rest) > 0:
		return m, features(rest[0]), nil
	}
	return m, 0, nil
}
