package gossip

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Summary signatures. A gateway holding its cluster's Ed25519 signing key signs every summary it
// publishes (Config.SigningKey); routers verify the signature with the cluster's registered public
// keys. The signed bytes are signingDomain followed by the summary's deterministic protobuf
// encoding with the signature field cleared, so the key id, the sequence and every figure are
// covered. A receiver that rebuilt a summary from a delta verifies the same bytes: the rebuilt
// summary equals the published one field for field.

// signingDomain separates summary signatures from anything else the same key might sign.
const signingDomain = "switchyard.gossip.v1.CapacitySummary\x00"

// Errors of signature verification.
var (
	// ErrUnsigned reports a summary that carries no signature.
	ErrUnsigned = errors.New("gossip: summary is not signed")
	// ErrBadSignature reports a signature that the key does not verify.
	ErrBadSignature = errors.New("gossip: summary signature does not verify")
)

// KeyID returns the id of an Ed25519 public key as summaries name it: the lowercase hex of the
// first 8 bytes of the key's SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// signatureField is CapacitySummary.signature's field number.
var signatureField = (&gossipv1.CapacitySummary{}).ProtoReflect().Descriptor().Fields().ByName("signature").Number()

// signedBytes returns the bytes a summary's signature covers: signingDomain and the summary's
// deterministic encoding without its signature field. s is not modified (it may be shared).
func signedBytes(s *gossipv1.CapacitySummary) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("gossip: encode summary for signing: %w", err)
	}
	return withoutField(signingDomain, raw, signatureField)
}

// SignSummary sets s's signing key id and signature with key. It modifies s.
func SignSummary(s *gossipv1.CapacitySummary, key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("gossip: signing key is %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	s.SigningKeyId = KeyID(key.Public().(ed25519.PublicKey))
	b, err := signedBytes(s)
	if err != nil {
		return err
	}
	s.Signature = ed25519.Sign(key, b)
	return nil
}

// VerifySummary checks s's signature with pub: ErrUnsigned when it has none, ErrBadSignature when
// pub does not verify it. It does not check that pub is the key s's signing key id names. s is
// not modified (it may be shared).
func VerifySummary(s *gossipv1.CapacitySummary, pub ed25519.PublicKey) error {
	if len(s.GetSignature()) == 0 {
		return ErrUnsigned
	}
	if len(pub) != ed25519.PublicKeySize || len(s.GetSignature()) != ed25519.SignatureSize {
		return ErrBadSignature
	}
	b, err := signedBytes(s)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, b, s.GetSignature()) {
		return ErrBadSignature
	}
	return nil
}
