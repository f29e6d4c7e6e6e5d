// Package autoscale provides the gateway's autoscaling signal: for each base model its pods serve,
// the number of replicas the pool should have, derived the way Kubernetes' Horizontal Pod
// Autoscaler derives one from a utilisation metric, from three of the pool's figures at once:
// KV cache in use, requests waiting per pod and mean predicted time to first token, each
// against its target. The highest ratio wins:
//
//	desired = ceil(ready × max(kv/targetKV, queuePerPod/targetQueue, ttft/targetTTFT))
//
// left at ready within the tolerance band, bounded to max(ready × MaxScaleUpFactor, ready + 4)
// per step, held at the highest value of the scale-down window and clamped to [MinReplicas,
// MaxReplicas]. A pool with no ready pod and requests waiting asks for at least one.
//
// The count is exported as switchyard_gateway_desired_replicas{model}, with the ratios behind
// it, for KEDA's Prometheus scaler or an HPA external metric (target average value 1): the
// autoscaler then asks for exactly that many replicas.
package autoscale
