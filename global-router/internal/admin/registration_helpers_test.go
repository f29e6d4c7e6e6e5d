package admin_test

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/gossip"
)

// registration is a cluster or region registration message.
type registration interface {
	GetRevision() int64
	GetKeyIds() []string
	GetPublicKeys() [][]byte
}

// invalidEdit makes a valid registration invalid in field.
type invalidEdit[R registration] struct {
	name, field string
	edit        func(r R)
}

// testPublicKey returns the Ed25519 public key of the seed whose first byte is b.
func testPublicKey(b byte) []byte {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = b
	return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
}

// wantCreatedOnce registers fresh() and returns it as stored, which must carry a revision and
// the key id of its one public key; registering fresh() again must be a conflict.
func wantCreatedOnce[R registration](t *testing.T, register func(R) (R, error), fresh func() R) R {
	t.Helper()
	stored, err := register(fresh())
	if err != nil {
		t.Fatal(err)
	}
	wantID := gossip.KeyID(fresh().GetPublicKeys()[0])
	if stored.GetRevision() == 0 || len(stored.GetKeyIds()) != 1 || stored.GetKeyIds()[0] != wantID {
		t.Fatalf("stored = %v, want a revision and key id %s", stored, wantID)
	}
	_, err = register(fresh())
	wantCode(t, err, connect.CodeFailedPrecondition)
	return stored
}

// wantInvalid registers fresh() with each edit applied: each must be refused as an invalid
// argument naming the edit's field.
func wantInvalid[R registration](t *testing.T, register func(R) (R, error), fresh func() R, edits []invalidEdit[R]) {
	t.Helper()
	for _, b := range edits {
		r := fresh()
		b.edit(r)
		_, err := register(r)
		wantCode(t, err, connect.CodeInvalidArgument)
		if !strings.Contains(err.Error(), b.field) {
			t.Errorf("%s: error %q does not name %s", b.name, err, b.field)
		}
	}
}
