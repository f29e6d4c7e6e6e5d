package route53test

import (
	"encoding/xml"
	"net/http"
)

// namespace is Route 53's XML namespace, on every document it sends and receives.
const namespace = "https://route53.amazonaws.com/doc/2013-04-01/"

// RecordSet is one stored resource record set, in Route 53's XML shape. Names are stored
// lowercase with a trailing dot, as Route 53 returns them.
type RecordSet struct {
	Name            string       `xml:"Name"`
	Type            string       `xml:"Type"`
	SetIdentifier   string       `xml:"SetIdentifier,omitempty"`
	Weight          *int64       `xml:"Weight,omitempty"`
	Region          string       `xml:"Region,omitempty"`
	TTL             *int64       `xml:"TTL,omitempty"`
	ResourceRecords []Value      `xml:"ResourceRecords>ResourceRecord,omitempty"`
	AliasTarget     *AliasTarget `xml:"AliasTarget,omitempty"`
	HealthCheckID   string       `xml:"HealthCheckId,omitempty"`
}

// Value is one value of a record set (an address, a host name).
type Value struct {
	Value string `xml:"Value"`
}

// AliasTarget is an alias record's target.
type AliasTarget struct {
	HostedZoneID         string `xml:"HostedZoneId"`
	DNSName              string `xml:"DNSName"`
	EvaluateTargetHealth bool   `xml:"EvaluateTargetHealth"`
}

type changeRequest struct {
	XMLName xml.Name `xml:"ChangeResourceRecordSetsRequest"`
	Comment string   `xml:"ChangeBatch>Comment"`
	Changes []change `xml:"ChangeBatch>Changes>Change"`
}

type change struct {
	Action string    `xml:"Action"`
	Set    RecordSet `xml:"ResourceRecordSet"`
}

type changeResponse struct {
	XMLName     xml.Name `xml:"ChangeResourceRecordSetsResponse"`
	Xmlns       string   `xml:"xmlns,attr"`
	ID          string   `xml:"ChangeInfo>Id"`
	Status      string   `xml:"ChangeInfo>Status"`
	SubmittedAt string   `xml:"ChangeInfo>SubmittedAt"`
	Comment     string   `xml:"ChangeInfo>Comment,omitempty"`
}

type listResponse struct {
	XMLName              xml.Name    `xml:"ListResourceRecordSetsResponse"`
	Xmlns                string      `xml:"xmlns,attr"`
	Sets                 []RecordSet `xml:"ResourceRecordSets>ResourceRecordSet"`
	IsTruncated          bool        `xml:"IsTruncated"`
	NextRecordName       string      `xml:"NextRecordName,omitempty"`
	NextRecordType       string      `xml:"NextRecordType,omitempty"`
	NextRecordIdentifier string      `xml:"NextRecordIdentifier,omitempty"`
	MaxItems             int         `xml:"MaxItems"`
}

// errorResponse is the REST-XML error envelope the SDK decodes into a smithy.APIError.
type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

// invalidChangeBatch is Route 53's own error document for a rejected batch.
type invalidChangeBatch struct {
	XMLName   xml.Name `xml:"InvalidChangeBatch"`
	Xmlns     string   `xml:"xmlns,attr"`
	Messages  []string `xml:"Messages>Message"`
	RequestID string   `xml:"RequestId"`
}

// writeXML writes v as an XML document with status.
func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", "fake-request")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

// writeError writes an ErrorResponse with code.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	typ := "Sender"
	if status >= 500 {
		typ = "Receiver"
	}
	writeXML(w, status, errorResponse{Xmlns: namespace, Type: typ, Code: code, Message: msg, RequestID: "fake-request"})
}
