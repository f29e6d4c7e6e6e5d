package dnssync_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync"
	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync/route53test"
)

// TestNewClientPagesThroughTheFake builds the production client (default credential chain, here
// from the environment) against the loopback fake and pages through a zone.
func TestNewClientPagesThroughTheFake(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	fake := route53test.New()
	fake.AddZone(zone, foreign...)
	fake.SetPageSize(2)
	cli, err := dnssync.NewClient(testCtx(t), dnssync.ClientConfig{Endpoint: fake.Start(t).URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	in := &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String("/hostedzone/" + zone)}
	for pages := 0; ; pages++ {
		out, err := cli.ListResourceRecordSets(testCtx(t), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range out.ResourceRecordSets {
			names = append(names, *rs.Name+" "+string(rs.Type)+" "+aws.ToString(rs.SetIdentifier))
		}
		if !out.IsTruncated {
			break
		}
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier =
			out.NextRecordName, out.NextRecordType, out.NextRecordIdentifier
	}
	want := []string{"api.example.com. A ap-south-1", "api.example.com. TXT ", "www.example.com. A "}
	if !slices.Equal(names, want) {
		t.Fatalf("listed %q, want %q", names, want)
	}
}

// TestSyncPagesThroughOwnedRecords runs the sync over a zone listed one set per page.
func TestSyncPagesThroughOwnedRecords(t *testing.T) {
	fake := route53test.New()
	fake.AddZone(zone, foreign...)
	fake.SetPageSize(1)
	startSyncer(t, newNamespace(), "r1", fake.Start(t), nil)
	poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1", "us-east-1"), "records published")
	changes := fake.Calls(route53test.OpChange)
	// Later periods find the records in step across pages and change nothing.
	lists := fake.Calls(route53test.OpList)
	poll.Until(t, waitTimeout, func() bool { return fake.Calls(route53test.OpList) >= lists+6 }, "more reconciliations")
	if got := fake.Calls(route53test.OpChange); got != changes {
		t.Fatalf("changes went from %d to %d with nothing to change", changes, got)
	}
	checkForeign(t, fake)
}
