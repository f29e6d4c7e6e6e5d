package oracle

import (
	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// encodeRequest builds the JSON body loadgen sends for r, and whether it goes to the chat API:
// the oracle converts the same bytes with modelsim's server code, so that every pod simulates
// exactly the request it would receive over HTTP.
func encodeRequest(r *workload.Request, stream, ignoreEOS bool) ([]byte, bool, error) {
	body, err := loadgen.EncodeRequest(r, stream, ignoreEOS)
	return body, r.Endpoint != workload.Completions, err
}
