package route53test_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"

	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync/route53test"
)

func client(url string) *route53.Client {
	return route53.New(route53.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint:     aws.String(url),
		RetryMaxAttempts: 1,
	})
}

func latency(region, value string) *types.ResourceRecordSet {
	return &types.ResourceRecordSet{
		Name:          aws.String("api.example.com"),
		Type:          types.RRTypeA,
		SetIdentifier: aws.String(region),
		Region: types.ResourceRecordSetRegion(
			region,
		),
		TTL:             aws.Int64(60),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String(value)}},
	}
}

func simple(value string) *types.ResourceRecordSet {
	return &types.ResourceRecordSet{Name: aws.String("api.example.com"), Type: types.RRTypeA, TTL: aws.Int64(60),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String(value)}}}
}

// TestChangeBatchSemantics checks the fake's batch rules through the real SDK; a rejected batch
// changes nothing.
func TestChangeBatchSemantics(t *testing.T) {
	tests := []struct {
		name    string
		changes []types.Change
		code    string // "" for success
		after   int    // record sets afterwards
	}{
		{"create", []types.Change{{Action: "CREATE", ResourceRecordSet: latency("eu-west-1", "192.0.2.2")}}, "", 2},
		{
			"create existing",
			[]types.Change{{Action: "CREATE", ResourceRecordSet: latency("us-east-1", "192.0.2.1")}},
			"InvalidChangeBatch",
			1,
		},
		{"upsert existing", []types.Change{{Action: "UPSERT", ResourceRecordSet: latency("us-east-1", "192.0.2.9")}}, "", 1},
		{"delete exact", []types.Change{{Action: "DELETE", ResourceRecordSet: latency("us-east-1", "192.0.2.1")}}, "", 0},
		{
			"delete mismatch",
			[]types.Change{{Action: "DELETE", ResourceRecordSet: latency("us-east-1", "192.0.2.9")}},
			"InvalidChangeBatch",
			1,
		},
		{
			"mix with simple",
			[]types.Change{{Action: "CREATE", ResourceRecordSet: simple("192.0.2.3")}},
			"InvalidChangeBatch",
			1,
		},
		{"atomic batch", []types.Change{
			{Action: "CREATE", ResourceRecordSet: latency("eu-west-1", "192.0.2.2")},
			{Action: "DELETE", ResourceRecordSet: latency("ap-south-1", "192.0.2.4")},
		}, "InvalidChangeBatch", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := route53test.New()
			fake.AddZone("Z1", route53test.RecordSet{Name: "api.example.com", Type: "A", SetIdentifier: "us-east-1",
				Region: "us-east-1", TTL: aws.Int64(60), ResourceRecords: []route53test.Value{{Value: "192.0.2.1"}}})
			_, err := client(
				fake.Start(t).URL,
			).ChangeResourceRecordSets(context.Background(), &route53.ChangeResourceRecordSetsInput{
				HostedZoneId: aws.String("Z1"), ChangeBatch: &types.ChangeBatch{Changes: tt.changes}})
			if got := errorCode(err); got != tt.code {
				t.Fatalf("error %v (code %q), want code %q", err, got, tt.code)
			}
			if n := len(fake.Records("Z1")); n != tt.after {
				t.Fatalf("%d record sets afterwards, want %d", n, tt.after)
			}
		})
	}
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func TestErrorsAndInjectedFailures(t *testing.T) {
	fake := route53test.New()
	fake.AddZone("Z1")
	ep := fake.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := client(ep.URL)
	if _, err := cli.ListResourceRecordSets(
		ctx,
		&route53.ListResourceRecordSetsInput{HostedZoneId: aws.String("Z9")},
	); errorCode(
		err,
	) != "NoSuchHostedZone" {
		t.Fatalf("unknown zone: %v", err)
	}
	fake.FailNext(1, http.StatusBadRequest, "Throttling")
	if _, err := cli.ListResourceRecordSets(
		ctx,
		&route53.ListResourceRecordSetsInput{HostedZoneId: aws.String("Z1")},
	); errorCode(
		err,
	) != "Throttling" {
		t.Fatalf("injected throttling: %v", err)
	}
	if _, err := cli.ListResourceRecordSets(
		ctx,
		&route53.ListResourceRecordSetsInput{HostedZoneId: aws.String("Z1")},
	); err != nil {
		t.Fatalf("after the injected failure: %v", err)
	}
	resp, err := http.Get(ep.URL + "/2013-04-01/hostedzone/Z1/rrset")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned request: status %d, want 403", resp.StatusCode)
	}
	if got := ep.Calls(route53test.OpList); got != 4 {
		t.Fatalf("endpoint list calls = %d, want 4", got)
	}
}
