{{/* Chart name, truncated to the DNS label limit. */}}
{{- define "cluster-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already holds the chart name. */}}
{{- define "cluster-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "cluster-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cluster-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "cluster-gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "cluster-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: endpoint-picker
app.kubernetes.io/part-of: switchyard
{{- end }}

{{- define "cluster-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cluster-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "cluster-gateway.poolNamespace" -}}
{{- default .Release.Namespace .Values.pool.namespace }}
{{- end }}

{{/* "true" when the replicas share state (replicaSharing.enabled and more than one replica). */}}
{{- define "cluster-gateway.replicaSharing" -}}
{{- if and .Values.replicaSharing.enabled (gt (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}

{{- define "cluster-gateway.replicaSecretName" -}}
{{- default (printf "%s-replica" (include "cluster-gateway.fullname" .)) .Values.replicaSharing.existingSecret }}
{{- end }}

{{- define "cluster-gateway.gossipSecretName" -}}
{{- default (printf "%s-gossip" (include "cluster-gateway.fullname" .)) .Values.gossip.existingSecret }}
{{- end }}

{{/* The Secret holding the summary signing key: the existing one, or the chart's own made from
gossip.summarySigning.key; empty when summaries go unsigned. */}}
{{- define "cluster-gateway.signingSecretName" -}}
{{- if .Values.gossip.summarySigning.existingSecret }}
{{- .Values.gossip.summarySigning.existingSecret }}
{{- else if .Values.gossip.summarySigning.key }}
{{- printf "%s-signing" (include "cluster-gateway.fullname" .) }}
{{- end }}
{{- end }}

{{- define "cluster-gateway.configMapName" -}}
{{- default (printf "%s-epp" (include "cluster-gateway.fullname" .)) .Values.existingConfigMap }}
{{- end }}

{{/* The ConfigMap holding the tenant limits file: the existing one, or the chart's own made
from tenantLimits.limits; empty when the gateway enforces no tenant limits. */}}
{{- define "cluster-gateway.tenantLimitsConfigMap" -}}
{{- if .Values.tenantLimits.existingConfigMap }}
{{- .Values.tenantLimits.existingConfigMap }}
{{- else if .Values.tenantLimits.limits }}
{{- printf "%s-tenant-limits" (include "cluster-gateway.fullname" .) }}
{{- end }}
{{- end }}

{{- define "cluster-gateway.hasConfig" -}}
{{- if or .Values.existingConfigMap .Values.endpointPickerConfig }}true{{ end }}
{{- end }}

{{/* Fails rendering on values that cannot work together. */}}
{{/* The port the proxy Service's load balancer health-checks (/readyz), as its annotations say:
aws-load-balancer-healthcheck-port, "traffic-port" (the AWS Load Balancer Controller's default)
being the HTTP port. Empty without a proxy Service of type LoadBalancer. */}}
{{- define "cluster-gateway.healthCheckPort" -}}
{{- if and .Values.proxyService.enabled (eq .Values.proxyService.type "LoadBalancer") }}
{{- $port := toString (index (.Values.proxyService.annotations | default dict) "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port" | default "traffic-port") }}
{{- if eq $port "traffic-port" }}{{ .Values.ports.http }}
{{- else if regexMatch "^[0-9]{1,5}$" $port }}{{ $port }}
{{- else }}{{ fail (printf "proxyService.annotations: aws-load-balancer-healthcheck-port %q: want traffic-port or a port number" $port) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "cluster-gateway.validate" -}}
{{- if not .Values.cluster }}{{ fail "cluster is required" }}{{ end }}
{{- if not .Values.region }}{{ fail "region is required" }}{{ end }}
{{- if and .Values.pool.name .Values.endpoints }}{{ fail "set either pool.name or endpoints, not both" }}{{ end }}
{{- if not (or .Values.pool.name .Values.endpoints) }}{{ fail "set pool.name (an InferencePool) or endpoints (static model servers)" }}{{ end }}
{{- if not (has .Values.profile (list "default" "gie-default" "gie-lora" "pd" "round-robin" "least-request" "random" "weighted-round-robin" "p2c" "leastconn")) }}{{ fail (printf "profile %q is not one of default, gie-default, gie-lora, pd, round-robin, least-request, random, weighted-round-robin, p2c, leastconn" .Values.profile) }}{{ end }}
{{- if and .Values.tls.requireClientCertificates (not .Values.tls.secretName) }}{{ fail "tls.requireClientCertificates needs tls.secretName" }}{{ end }}
{{- if and .Values.gossip.summarySigning.key .Values.gossip.summarySigning.existingSecret }}{{ fail "set gossip.summarySigning.key or gossip.summarySigning.existingSecret, not both" }}{{ end }}
{{- with .Values.gossip.summarySigning.key }}
{{- if not (or (hasPrefix "-----BEGIN PRIVATE KEY-----" (trim .)) (regexMatch "^[A-Za-z0-9+/]{43}=$" (trim .))) }}{{ fail "gossip.summarySigning.key must be a PEM PRIVATE KEY block (PKCS #8, e.g. Terraform's tls_private_key private_key_pem_pkcs8) or the base64 of a 32-byte Ed25519 seed" }}{{ end }}
{{- end }}
{{- if and .Values.extProc.certSecretName (not .Values.extProc.secureServing) }}{{ fail "extProc.certSecretName needs extProc.secureServing" }}{{ end }}
{{- if .Values.autoscaling.keda.enabled }}
{{- if not .Values.autoscaling.keda.targets }}{{ fail "autoscaling.keda.enabled needs autoscaling.keda.targets (the model-server Deployments to scale)" }}{{ end }}
{{- if not .Values.autoscaling.keda.prometheusAddress }}{{ fail "autoscaling.keda.enabled needs autoscaling.keda.prometheusAddress" }}{{ end }}
{{- range .Values.autoscaling.keda.targets }}
{{- if not (and .deployment .model) }}{{ fail "autoscaling.keda.targets: each needs deployment and model" }}{{ end }}
{{- if not (regexMatch "^[A-Za-z0-9._/:@-]+$" .model) }}{{ fail (printf "autoscaling.keda.targets: model %q: letters, digits and ._/:@- only" .model) }}{{ end }}
{{- if lt (int (default 10 .maxReplicas)) (int (default 1 .minReplicas)) }}{{ fail (printf "autoscaling.keda.targets: %s: maxReplicas below minReplicas" .deployment) }}{{ end }}
{{- end }}
{{- end }}
{{- if and .Values.kvEvents.trustTopic (not .Values.kvEvents.enabled) }}{{ fail "kvEvents.trustTopic needs kvEvents.enabled" }}{{ end }}
{{- with .Values.tenantLimits }}
{{- if and .limits .existingConfigMap }}{{ fail "set tenantLimits.limits or tenantLimits.existingConfigMap, not both" }}{{ end }}
{{- if not (regexMatch "^[-._a-zA-Z0-9]+$" (toString .key)) }}{{ fail (printf "tenantLimits.key %q: a ConfigMap key (letters, digits, -._)" (toString .key)) }}{{ end }}
{{- if not (kindIs "map" (.limits | default dict)) }}{{ fail "tenantLimits.limits must map tenant names to limits" }}{{ end }}
{{- range $tenant, $l := .limits }}
{{- if not (kindIs "map" ($l | default dict)) }}{{ fail (printf "tenantLimits.limits.%s must be an object of limits" $tenant) }}{{ end }}
{{- range $k, $_ := $l }}
{{- if not (has $k (list "requests_per_second" "max_concurrent" "tokens_per_minute")) }}{{ fail (printf "tenantLimits.limits.%s: unknown limit %q (requests_per_second, max_concurrent, tokens_per_minute)" $tenant $k) }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- if not (kindIs "slice" (.Values.passthroughPaths | default list)) }}{{ fail "passthroughPaths must be a list of PATH=json or PATH=multipart entries" }}{{ end }}
{{- $seen := dict }}
{{- range .Values.passthroughPaths }}
{{- $e := toString . }}
{{- if eq $e "none" }}
{{- if gt (len $.Values.passthroughPaths) 1 }}{{ fail "passthroughPaths: none stands alone" }}{{ end }}
{{- else if not (regexMatch "^/[A-Za-z0-9._~/-]+=(json|multipart)$" $e) }}
{{- fail (printf "passthroughPaths: %q must be PATH=json or PATH=multipart, PATH starting with /" $e) }}
{{- else }}
{{- $path := regexReplaceAll "=.*$" $e "" }}
{{- if hasKey $seen $path }}{{ fail (printf "passthroughPaths: %s is listed twice" $path) }}{{ end }}
{{- $_ := set $seen $path true }}
{{- end }}
{{- end }}
{{- if not (has .Values.podAntiAffinity (list "" "soft" "hard")) }}{{ fail "podAntiAffinity must be soft, hard or empty" }}{{ end }}
{{- if and .Values.podDisruptionBudget.enabled (ge (int .Values.podDisruptionBudget.minAvailable) (int .Values.replicaCount)) (gt (int .Values.replicaCount) 1) }}{{ fail "podDisruptionBudget.minAvailable must be below replicaCount, or no node could ever be drained" }}{{ end }}
{{- end }}

{{/* The gateway's command-line flags, one per line. */}}
{{- define "cluster-gateway.args" -}}
- --cluster={{ .Values.cluster }}
- --region={{ .Values.region }}
- --listen=:{{ .Values.ports.http }}
- --ext-proc-listen=:{{ .Values.ports.extProc }}
{{- if .Values.extProc.secureServing }}
- --secure-serving=true
{{- with .Values.extProc.certSecretName }}
- --cert-path=/etc/switchyard/ext-proc-tls
{{- end }}
{{- end }}
- --metrics-listen=:{{ .Values.ports.metrics }}
{{- if .Values.pool.name }}
- --pool-name={{ .Values.pool.name }}
- --pool-namespace={{ include "cluster-gateway.poolNamespace" . }}
{{- else }}
- --endpoints={{ join "," .Values.endpoints }}
{{- end }}
{{- if include "cluster-gateway.hasConfig" . }}
- --config=/etc/switchyard/epp/config.yaml
{{- else }}
- --profile={{ .Values.profile }}
{{- end }}
{{- if .Values.adapterMap }}
{{- $pairs := list }}
{{- range $adapter, $base := .Values.adapterMap }}
{{- $pairs = append $pairs (printf "%s=%s" $adapter $base) }}
{{- end }}
- --adapter-map={{ join "," $pairs }}
{{- end }}
{{- if .Values.gossip.enabled }}
- --gossip-bind=$(POD_IP):{{ .Values.ports.gossip }}
- --gossip-key-file=/etc/switchyard/gossip/{{ .Values.gossip.secretKey }}
{{- if .Values.advertiseURL }}
- --advertise-url={{ .Values.advertiseURL }}
{{- else }}
- --advertise-url={{ if .Values.tls.secretName }}https{{ else }}http{{ end }}://$(POD_IP):{{ .Values.ports.http }}
{{- end }}
{{- with .Values.gossip.join }}
- --gossip-join={{ join "," . }}
{{- end }}
{{- if include "cluster-gateway.signingSecretName" . }}
- --summary-signing-key-file=/etc/switchyard/signing/{{ .Values.gossip.summarySigning.secretKey }}
{{- end }}
{{- end }}
{{- if include "cluster-gateway.replicaSharing" . }}
- --replica-bind=$(POD_IP):{{ .Values.ports.replica }}
- --replica-join={{ include "cluster-gateway.fullname" . }}-replicas.{{ .Release.Namespace }}.svc:{{ .Values.ports.replica }}
- --replica-key-file=/etc/switchyard/replica/{{ .Values.replicaSharing.secretKey }}
{{- end }}
{{- if .Values.tls.secretName }}
- --tls-cert-file=/etc/switchyard/tls/tls.crt
- --tls-key-file=/etc/switchyard/tls/tls.key
{{- if .Values.tls.requireClientCertificates }}
- --tls-client-ca-file=/etc/switchyard/tls/ca.crt
{{- end }}
{{- end }}
{{- with .Values.tracing }}
{{- if .otlpEndpoint }}
{{- if not (has .protocol (list "grpc" "http")) }}
{{- fail (printf "tracing.protocol must be grpc or http, got %q" (toString .protocol)) }}
{{- end }}
{{- if or (lt (float64 .sampleRatio) 0.0) (gt (float64 .sampleRatio) 1.0) }}
{{- fail (printf "tracing.sampleRatio must be in 0..1, got %v" .sampleRatio) }}
{{- end }}
{{- if not (has .remoteParent (list "respect" "ratio" "ignore")) }}
{{- fail (printf "tracing.remoteParent must be respect, ratio or ignore, got %q" (toString .remoteParent)) }}
{{- end }}
- --otlp-endpoint={{ .otlpEndpoint }}
- --otlp-protocol={{ .protocol }}
- --otlp-insecure={{ .insecure }}
- --trace-sample-ratio={{ .sampleRatio }}
- --trace-remote-parent={{ .remoteParent }}
{{- end }}
{{- end }}
{{- if .Values.kvEvents.enabled }}
- --kv-events-endpoint=tcp://*:{{ .Values.ports.kvEvents }}
- --kv-events-trust-topic={{ .Values.kvEvents.trustTopic }}
{{- end }}
{{- if include "cluster-gateway.tenantLimitsConfigMap" . }}
- --tenant-limits-file=/etc/switchyard/tenant-limits/{{ .Values.tenantLimits.key }}
{{- end }}
{{- with .Values.autoscaling.signal }}
- --autoscale-interval={{ .interval }}
- --autoscale-target-kv={{ .targetKVUtilization }}
- --autoscale-target-queue={{ .targetQueuePerPod }}
- --autoscale-target-ttft={{ .targetTTFT }}
- --autoscale-scale-down-window={{ .scaleDownWindow }}
{{- end }}
{{- with .Values.passthroughPaths }}
- --passthrough-paths={{ join "," . }}
{{- end }}
- --log-format={{ .Values.logFormat }}
- --log-level={{ .Values.logLevel }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end }}

{{/* GOMEMLIMIT for the container: 90% of resources.limits.memory in MiB, so the Go runtime
collects garbage harder before the kernel's OOM killer would act; empty without a memory limit.
The limit is a Kubernetes quantity: an integer with Ki, Mi, Gi, Ti, k, M, G or T, or bytes. */}}
{{- define "cluster-gateway.goMemLimit" -}}
{{- $mem := "" }}
{{- with (.Values.resources | default dict).limits }}
{{- if kindIs "float64" .memory }}{{ $mem = printf "%d" (int64 .memory) }}{{ else }}{{ $mem = toString (.memory | default "") }}{{ end }}
{{- end }}
{{- if $mem }}
{{- $num := regexFind "^[0-9]+" $mem }}
{{- $unit := trimPrefix $num $mem }}
{{- $factors := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 }}
{{- if or (not $num) (not (hasKey $factors $unit)) }}{{ fail (printf "resources.limits.memory %q: want an integer with Ki, Mi, Gi, Ti, k, M, G or T" $mem) }}{{ end }}
{{- printf "%dMiB" (div (mul (atoi $num) (get $factors $unit) 9) (mul 10 1048576)) }}
{{- end }}
{{- end }}
