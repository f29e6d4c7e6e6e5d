package workload

import (
	"math/rand/v2"
	"time"
)

// arrivalTimes draws one arrival process's instants in [0, d), in order.
func arrivalTimes(rng *rand.Rand, a Arrival, d time.Duration) []time.Duration {
	end := d.Seconds()
	out := make([]time.Duration, 0, int(a.Rate*end*1.1)+16)
	if a.Process == Poisson {
		return poissonSpan(rng, out, 0, end, a.Rate)
	}
	on, off := onOffRates(a)
	period, burst := a.Period.Seconds(), a.BurstLength.Seconds()
	for start := 0.0; start < end; start += period {
		out = poissonSpan(rng, out, start, min(start+burst, end), on)
		out = poissonSpan(rng, out, start+burst, min(start+period, end), off)
	}
	return out
}

// onOffRates returns the rate within bursts and between them, chosen so that the mean is a.Rate.
func onOffRates(a Arrival) (on, off float64) {
	period, burst := a.Period.Seconds(), a.BurstLength.Seconds()
	on = a.Rate * a.BurstFactor
	off = max(0, a.Rate*(period-a.BurstFactor*burst)/(period-burst))
	return on, off
}

// poissonSpan appends the arrivals of a Poisson process of rate in [from, to). Poisson processes
// are memoryless, so restarting at a phase boundary is exact.
func poissonSpan(rng *rand.Rand, out []time.Duration, from, to, rate float64) []time.Duration {
	if rate <= 0 {
		return out
	}
	for t := from + rng.ExpFloat64()/rate; t < to; t += rng.ExpFloat64() / rate {
		out = append(out, time.Duration(t*float64(time.Second)))
	}
	return out
}
