package dnssync

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
)

// Route53API is the part of the Route 53 API the sync calls; *route53.Client implements it.
// It must be safe for concurrent use.
type Route53API interface {
	ListResourceRecordSets(
		ctx context.Context,
		in *route53.ListResourceRecordSetsInput,
		opts ...func(*route53.Options),
	) (*route53.ListResourceRecordSetsOutput, error)
	ChangeResourceRecordSets(
		ctx context.Context,
		in *route53.ChangeResourceRecordSetsInput,
		opts ...func(*route53.Options),
	) (*route53.ChangeResourceRecordSetsOutput, error)
}

var _ Route53API = (*route53.Client)(nil)

// ClientConfig configures the Route 53 client NewClient builds.
type ClientConfig struct {
	// Endpoint overrides the Route 53 endpoint (a URL), e.g. a local fake in tests. Default: AWS.
	Endpoint string
	// SigningRegion is the region requests are signed for. Default "us-east-1" (Route 53 is global).
	SigningRegion string
	// MaxAttempts bounds the SDK's own attempts per call, throttling retries included. Default 3.
	MaxAttempts int
	// HTTPClient sends the requests. Default: the SDK's.
	HTTPClient *http.Client
}

// NewClient returns a Route 53 client with credentials from the SDK's default chain
// (environment, shared files, web identity, instance or task role).
func NewClient(ctx context.Context, cc ClientConfig) (*route53.Client, error) {
	if cc.SigningRegion == "" {
		cc.SigningRegion = "us-east-1"
	}
	if cc.MaxAttempts == 0 {
		cc.MaxAttempts = 3
	}
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(cc.SigningRegion),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = cc.MaxAttempts })
		}),
	}
	if cc.HTTPClient != nil {
		opts = append(opts, awsconfig.WithHTTPClient(cc.HTTPClient))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("dnssync: aws config: %w", err)
	}
	return route53.NewFromConfig(awsCfg, func(o *route53.Options) {
		if cc.Endpoint != "" {
			o.BaseEndpoint = aws.String(cc.Endpoint)
		}
	}), nil
}

// listOwned returns the owned record sets by region, paging through the sets of the name.
func (s *Syncer) listOwned(ctx context.Context) (map[string]types.ResourceRecordSet, error) {
	name, typ := fqdn(s.cfg.RecordName), types.RRType(s.cfg.RecordType)
	in := &route53.ListResourceRecordSetsInput{
		HostedZoneId:    aws.String(s.zone),
		StartRecordName: aws.String(name),
		StartRecordType: typ,
	}
	out := map[string]types.ResourceRecordSet{}
	for {
		resp, err := s.api.ListResourceRecordSets(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dnssync: list record sets of %s: %w", name, err)
		}
		for _, rs := range resp.ResourceRecordSets {
			if s.cfg.owned(rs) {
				out[*rs.SetIdentifier] = rs
			}
		}
		if !resp.IsTruncated || fqdn(aws.ToString(resp.NextRecordName)) != name || resp.NextRecordType != typ {
			return out, nil
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier = resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier
	}
}

// change submits the changes as one atomic batch.
func (s *Syncer) change(ctx context.Context, changes []types.Change) error {
	_, err := s.api.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(s.zone),
		ChangeBatch:  &types.ChangeBatch{Changes: changes, Comment: aws.String("switchyard dns-sync: region drains")},
	})
	if err != nil {
		return fmt.Errorf("dnssync: change record sets of %s: %w", fqdn(s.cfg.RecordName), err)
	}
	return nil
}

// throttled reports whether err is Route 53 throttling (its rate limit, or a change still
// propagating), which calls for a longer pause.
func throttled(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if _, ok := retry.DefaultThrottleErrorCodes[ae.ErrorCode()]; ok {
			return true
		}
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusTooManyRequests
}
