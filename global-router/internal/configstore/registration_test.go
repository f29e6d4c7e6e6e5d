package configstore_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/gossip"
)

func testPublicKey(b byte) []byte {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = b
	return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
}

func validRegistration() *adminv1.ClusterRegistration {
	return &adminv1.ClusterRegistration{
		Cluster: "c1", Region: "us-east-1",
		GatewayUrls: []string{"https://gw-a.c1.example.com:8443", "https://gw-b.c1.example.com"},
		Models:      []string{"meta-llama/Llama-3.1-8B-Instruct"},
		PublicKeys:  [][]byte{testPublicKey(1), testPublicKey(2)},
	}
}

func TestValidateRegistration(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*adminv1.ClusterRegistration)
		cleartext bool
		wantField string // "" = valid
	}{
		{"valid", func(*adminv1.ClusterRegistration) {}, false, ""},
		{"any model", func(r *adminv1.ClusterRegistration) { r.Models = nil }, false, ""},
		{
			"cleartext allowed",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"http://127.0.0.1:8081"} },
			true,
			"",
		},
		{
			"cleartext refused",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"http://127.0.0.1:8081"} },
			false,
			"gateway_urls[0]",
		},
		{"bad cluster", func(r *adminv1.ClusterRegistration) { r.Cluster = "a/b" }, false, "cluster"},
		{"no region", func(r *adminv1.ClusterRegistration) { r.Region = "" }, false, "region"},
		{"no url", func(r *adminv1.ClusterRegistration) { r.GatewayUrls = nil }, false, "gateway_urls"},
		{
			"url with path",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"https://gw.example.com/v1"} },
			false,
			"gateway_urls[0]",
		},
		{
			"url with slash",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"https://gw.example.com/"} },
			false,
			"gateway_urls[0]",
		},
		{
			"url with user",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"https://u:p@gw.example.com"} },
			false,
			"gateway_urls[0]",
		},
		{
			"url with query",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"https://gw.example.com?x=1"} },
			false,
			"gateway_urls[0]",
		},
		{
			"upper-case scheme",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"HTTPS://gw.example.com"} },
			false,
			"gateway_urls[0]",
		},
		{
			"other scheme",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"ftp://gw.example.com"} },
			true,
			"gateway_urls[0]",
		},
		{
			"relative url",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"gw.example.com:443"} },
			false,
			"gateway_urls[0]",
		},
		{"duplicate url", func(r *adminv1.ClusterRegistration) {
			r.GatewayUrls = []string{"https://gw.example.com", "https://gw.example.com"}
		}, false, "gateway_urls[1]"},
		{"bad model", func(r *adminv1.ClusterRegistration) { r.Models = []string{"a b"} }, false, "models[0]"},
		{"duplicate model", func(r *adminv1.ClusterRegistration) { r.Models = []string{"m", "m"} }, false, "models[1]"},
		{"no key", func(r *adminv1.ClusterRegistration) { r.PublicKeys = nil }, false, "public_keys"},
		{
			"short key",
			func(r *adminv1.ClusterRegistration) { r.PublicKeys = [][]byte{make([]byte, 31)} },
			false,
			"public_keys[0]",
		},
		{
			"duplicate key",
			func(r *adminv1.ClusterRegistration) { r.PublicKeys = [][]byte{testPublicKey(1), testPublicKey(1)} },
			false,
			"public_keys[1]",
		},
		{"too many keys", func(r *adminv1.ClusterRegistration) {
			r.PublicKeys = nil
			for i := range 9 {
				r.PublicKeys = append(r.PublicKeys, testPublicKey(byte(i)))
			}
		}, false, "public_keys"},
		{"negative revision", func(r *adminv1.ClusterRegistration) { r.Revision = -1 }, false, "revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRegistration()
			tt.edit(r)
			err := configstore.ValidateRegistration(r, tt.cleartext)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("ValidateRegistration = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, configstore.ErrInvalid) || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("ValidateRegistration = %v, want ErrInvalid naming %q", err, tt.wantField)
			}
		})
	}
}

func TestRegistrationLifecycle(t *testing.T) {
	s := newStore(t, nsClient(t, shared))
	runStore(t, s)
	ctx := testCtx(t)

	created, err := s.PutRegistration(ctx, validRegistration(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if created.GetRevision() == 0 || len(created.GetKeyIds()) != 2 ||
		created.GetKeyIds()[0] != gossip.KeyID(testPublicKey(1)) {
		t.Fatalf("created = %v", created)
	}
	if _, err := s.PutRegistration(ctx, validRegistration(), 0, false); !errors.Is(err, configstore.ErrConflict) {
		t.Fatalf("second create = %v, want ErrConflict", err)
	}
	cleartext := validRegistration()
	cleartext.GatewayUrls = []string{"http://gw.c1.example.com"}
	if _, err := s.PutRegistration(ctx, cleartext, created.GetRevision(), false); !errors.Is(err, configstore.ErrInvalid) {
		t.Fatalf("cleartext without the flag = %v, want ErrInvalid", err)
	}
	poll.Until(t, waitTimeout, func() bool {
		r, ok := s.Snapshot().Registration("c1")
		return ok && r.Stored.GetRevision() == created.GetRevision()
	}, "registration watched")
	v := s.Snapshot()
	r, _ := v.Registration("c1")
	if !r.AllowsURL("https://gw-b.c1.example.com") || r.AllowsURL("https://gw-c.c1.example.com") ||
		!r.AllowsModel("meta-llama/Llama-3.1-8B-Instruct") || r.AllowsModel("other") {
		t.Fatalf("registration view = %v", r.Stored)
	}
	if k := r.Keys[gossip.KeyID(testPublicKey(2))]; !k.Equal(ed25519.PublicKey(testPublicKey(2))) {
		t.Fatal("second key not indexed by its id")
	}
	if v.RegistrationCount() != 1 || v.RegistrationsRevision() < created.GetRevision() {
		t.Fatalf("count %d, revision %d", v.RegistrationCount(), v.RegistrationsRevision())
	}

	update := proto.CloneOf(created)
	update.Models = nil
	updated, err := s.PutRegistration(ctx, update, created.GetRevision(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRegistration(ctx, update, created.GetRevision(), false); !errors.Is(err, configstore.ErrConflict) {
		t.Fatalf("stale update = %v, want ErrConflict", err)
	}
	list, err := s.ListRegistrations(ctx)
	if err != nil || len(list) != 1 || list[0].GetRevision() != updated.GetRevision() || len(list[0].GetModels()) != 0 {
		t.Fatalf("list = %v, %v", list, err)
	}
	if err := s.DeleteRegistration(ctx, "c1", created.GetRevision()); !errors.Is(err, configstore.ErrConflict) {
		t.Fatalf("stale revoke = %v, want ErrConflict", err)
	}
	if err := s.DeleteRegistration(ctx, "c1", updated.GetRevision()); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRegistration(ctx, "c1", 0); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("revoke of nothing = %v, want ErrNotFound", err)
	}
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().RegistrationCount() == 0 }, "revocation watched")
	if s.Snapshot().RegistrationsRevision() <= updated.GetRevision() {
		t.Fatal("registrations revision did not move on revocation")
	}
}

func TestDecodeRegistrationRefusesBadValues(t *testing.T) {
	good, err := configstore.EncodeRegistration(validRegistration())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cluster string
		value         []byte
	}{
		{"not json", "c1", []byte("{")},
		{"other cluster", "c2", good},
		{"invalid", "c1", []byte(`{"cluster":"c1","region":"us-east-1"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := configstore.DecodeRegistration(tt.cluster, tt.value, 5); !errors.Is(err, configstore.ErrInvalid) {
				t.Fatalf("DecodeRegistration = %v, want ErrInvalid", err)
			}
		})
	}
	r, err := configstore.DecodeRegistration("c1", good, 5)
	if err != nil || r.GetRevision() != 5 || len(r.GetKeyIds()) != 2 {
		t.Fatalf("DecodeRegistration(good) = %v, %v", r, err)
	}
}

// FuzzDecodeRegistration: a stored value either fails with ErrInvalid or decodes to a valid
// registration that survives its own encoding.
func FuzzDecodeRegistration(f *testing.F) {
	good, _ := configstore.EncodeRegistration(validRegistration())
	f.Add(good)
	f.Add(
		[]byte(
			`{"cluster":"c1","region":"r","gateway_urls":["http://h:1"],"public_keys":["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}`,
		),
	)
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		r, err := configstore.DecodeRegistration("c1", value, 7)
		if err != nil {
			if !errors.Is(err, configstore.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if err := configstore.ValidateRegistration(r, true); err != nil {
			t.Fatalf("decoded registration invalid: %v", err)
		}
		again, err := configstore.EncodeRegistration(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := configstore.DecodeRegistration("c1", again, 7)
		if err != nil || !proto.Equal(back, r) {
			t.Fatalf("round trip: %v, %v", back, err)
		}
	})
}

// TestInvalidStoredRegistrationFailsClosed: a registration value written around the API that does
// not decode or validate drops the registration it replaced (which may have allowed other URLs,
// models or keys) and records the cluster as invalid, counted and logged once per value; a valid
// value written later, or a deletion, clears it.
func TestInvalidStoredRegistrationFailsClosed(t *testing.T) {
	tests := []struct{ name, value string }{
		{"garbage bytes", "\x00\xffnot json"},
		{"unknown field", `{"cluster":"c1","region":"us-east-1","gateway_url":["https://gw.c1.example.com"]}`},
		{
			"another cluster",
			`{"cluster":"c2","region":"us-east-1","gateway_urls":["https://gw.c1.example.com"],"public_keys":["` + base64.StdEncoding.EncodeToString(
				testPublicKey(1),
			) + `"]}`,
		},
		{
			"short key",
			`{"cluster":"c1","region":"us-east-1","gateway_urls":["https://gw.c1.example.com"],"public_keys":["AAAA"]}`,
		},
		{"no key", `{"cluster":"c1","region":"us-east-1","gateway_urls":["https://gw.c1.example.com"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			cli := nsClient(t, shared)
			reg := prometheus.NewRegistry()
			var logs syncBuffer
			s, err := configstore.New(cli, slog.New(slog.NewTextHandler(&logs, nil)), reg)
			if err != nil {
				t.Fatal(err)
			}
			runStore(t, s)
			if _, err := s.PutRegistration(ctx, validRegistration(), 0, false); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, waitTimeout, func() bool { return s.Snapshot().RegistrationCount() == 1 }, "registration watched")
			put, err := cli.Put(ctx, configstore.ClusterKey("c1"), tt.value)
			if err != nil {
				t.Fatal(err)
			}
			poll.Until(
				t,
				waitTimeout,
				func() bool { _, ok := s.Snapshot().InvalidRegistration("c1"); return ok },
				"registration invalid",
			)
			v := s.Snapshot()
			if _, ok := v.Registration("c1"); ok || v.RegistrationCount() != 0 {
				t.Fatal("the previous registration is still in force")
			}
			bad, _ := v.InvalidRegistration("c1")
			if bad.Cluster != "c1" || bad.Revision != put.Header.Revision || bad.Reason == "" {
				t.Fatalf("InvalidRegistration = %+v, want revision %d with a reason", bad, put.Header.Revision)
			}
			if all := v.InvalidRegistrations(); len(all) != 1 || all[0] != bad {
				t.Fatalf("InvalidRegistrations = %v", all)
			}
			if n := metricValue(t, reg, "switchyard_router_config_invalid_values_total"); n != 1 {
				t.Fatalf("invalid values counted %v, want 1", n)
			}
			if n := metricValue(t, reg, "switchyard_router_config_invalid_registrations"); n != 1 {
				t.Fatalf("invalid registrations gauge %v, want 1", n)
			}
			if n := strings.Count(logs.String(), "stored registration invalid"); n != 1 {
				t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
			}

			// Fixed through the API (naming the invalid value's revision), the cluster is registered again.
			fixed, err := s.PutRegistration(ctx, validRegistration(), put.Header.Revision, false)
			if err != nil {
				t.Fatalf("replace the invalid value: %v", err)
			}
			poll.Until(t, waitTimeout, func() bool {
				r, ok := s.Snapshot().Registration("c1")
				return ok && r.Stored.GetRevision() == fixed.GetRevision()
			}, "the fix applied")
			if _, ok := s.Snapshot().InvalidRegistration("c1"); ok {
				t.Fatal("still invalid after the fix")
			}
			if n := metricValue(t, reg, "switchyard_router_config_invalid_registrations"); n != 0 {
				t.Fatalf("invalid registrations gauge after the fix %v, want 0", n)
			}

			// Broken again and revoked: nothing is left of the cluster.
			if _, err := cli.Put(ctx, configstore.ClusterKey("c1"), tt.value); err != nil {
				t.Fatal(err)
			}
			poll.Until(
				t,
				waitTimeout,
				func() bool { _, ok := s.Snapshot().InvalidRegistration("c1"); return ok },
				"invalid again",
			)
			if err := s.DeleteRegistration(ctx, "c1", 0); err != nil {
				t.Fatalf("revoke the invalid value: %v", err)
			}
			poll.Until(t, waitTimeout, func() bool { return len(s.Snapshot().InvalidRegistrations()) == 0 }, "revoked")
			if s.Snapshot().RegistrationCount() != 0 {
				t.Fatal("registered after the revocation")
			}
		})
	}
}
