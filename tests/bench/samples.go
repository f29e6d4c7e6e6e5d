package bench

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
)

// samplesHeader names the columns of NAME-samples.csv.
const samplesHeader = "target,index,client_region,scheduled_ms,sent_ms,ttft_ms,e2e_ms,prompt_tokens,cached_tokens,output_tokens,status,error,cluster,served_region,route,endpoint"

// writeSamples writes every request of every target as one CSV row, so that a run's figures
// can be re-analysed (by arrival time, by where a request was served) without running it again.
// Times are in milliseconds of real time from the start of the run; a failed request has no TTFT.
func writeSamples(path string, lres *loadgen.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(strings.Split(samplesHeader, ","))
	for _, t := range lres.Targets {
		for i := range t.Samples {
			_ = w.Write(sampleRow(t.Name, &t.Samples[i])) // an error shows at Flush
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("bench: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

func sampleRow(target string, s *loadgen.Sample) []string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64) }
	ttft := ""
	if s.OK() {
		ttft = ms(s.TTFT)
	}
	return []string{target, strconv.Itoa(s.Index), s.Region, ms(s.Scheduled), ms(s.Sent), ttft, ms(s.E2E),
		strconv.Itoa(s.PromptTokens), strconv.Itoa(s.CachedTokens), strconv.Itoa(s.OutputTokens),
		strconv.Itoa(s.Status), string(s.Error), s.Cluster, s.ServedRegion, s.Route, s.Endpoint}
}
