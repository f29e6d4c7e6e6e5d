{{/* Chart name, truncated to the DNS label limit. */}}
{{- define "global-router.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already holds the chart name. */}}
{{- define "global-router.fullname" -}}
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

{{- define "global-router.selectorLabels" -}}
app.kubernetes.io/name: {{ include "global-router.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "global-router.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "global-router.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: router
app.kubernetes.io/part-of: switchyard
{{- end }}

{{/* Labels of the registration Job and its pod: not the router's selector labels, so no Service,
PodDisruptionBudget or NetworkPolicy of the routers selects them. */}}
{{- define "global-router.registrarLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ printf "%s-registrar" (include "global-router.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: registrar
{{- end }}

{{/* Fails rendering on cluster registrations the routers would refuse. */}}
{{- define "global-router.validateRegistrations" -}}
{{- $ci := .Values.clusterIdentity }}
{{- $seen := dict }}
{{- range $i, $r := $ci.registrations }}
{{- $what := printf "clusterIdentity.registrations[%d]" $i }}
{{- if not (and $r.cluster (regexMatch "^[A-Za-z0-9._-]{1,253}$" (toString $r.cluster))) }}{{ fail (printf "%s.cluster must be a cluster name ([A-Za-z0-9._-])" $what) }}{{ end }}
{{- if hasKey $seen $r.cluster }}{{ fail (printf "%s: cluster %s is listed twice" $what $r.cluster) }}{{ end }}
{{- $_ := set $seen $r.cluster true }}
{{- if not (and $r.region (regexMatch "^[A-Za-z0-9._-]{1,253}$" (toString $r.region))) }}{{ fail (printf "%s.region must be a region name" $what) }}{{ end }}
{{- if not $r.gatewayURLs }}{{ fail (printf "%s.gatewayURLs needs the exact URL each gateway of %s advertises" $what $r.cluster) }}{{ end }}
{{- range $u := $r.gatewayURLs }}
{{- if not (regexMatch "^https?://[^/?#@ ,]+$" (toString $u)) }}{{ fail (printf "%s.gatewayURLs: %q is not a base URL scheme://host[:port] without a path" $what $u) }}{{ end }}
{{- if and (hasPrefix "http://" $u) (not $ci.allowCleartextGateways) }}{{ fail (printf "%s.gatewayURLs: %s is cleartext: use https:// or set clusterIdentity.allowCleartextGateways" $what $u) }}{{ end }}
{{- end }}
{{- if not $r.publicKeys }}{{ fail (printf "%s.publicKeys needs the cluster's Ed25519 public key (PEM PUBLIC KEY, or the base64 of the raw 32 bytes)" $what) }}{{ end }}
{{- range $r.models }}
{{- if regexMatch "[, ]" (toString .) }}{{ fail (printf "%s.models: %q holds a comma or a space" $what .) }}{{ end }}
{{- end }}
{{- end }}
{{- if and $ci.registrations .Values.admin.tls.requireClientCertificates (not $ci.registrar.clientCertSecretName) }}
{{- fail "clusterIdentity.registrations with admin.tls.requireClientCertificates need clusterIdentity.registrar.clientCertSecretName: the client certificate the registration Job presents to the admin port" }}
{{- end }}
{{- end }}

{{- define "global-router.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "global-router.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "global-router.embeddedEtcd" -}}
{{- if not .Values.etcd.endpoints }}true{{ end }}
{{- end }}

{{- define "global-router.gossipSecretName" -}}
{{- default (printf "%s-gossip" (include "global-router.fullname" .)) .Values.gossip.existingSecret }}
{{- end }}

{{/* The Secret of the pool of aggregators' keyring; empty: the region pool's keyring. */}}
{{- define "global-router.wanKeySecretName" -}}
{{- with .Values.aggregator.wanKey }}
{{- if .existingSecret }}{{ .existingSecret }}
{{- else if .key }}{{ printf "%s-gossip-wan" (include "global-router.fullname" $) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Secret of the region signing key; empty: none (unsigned region digests). */}}
{{- define "global-router.regionSigningSecretName" -}}
{{- with .Values.aggregator.regionSigningKey }}
{{- if .existingSecret }}{{ .existingSecret }}
{{- else if .key }}{{ printf "%s-region-signing" (include "global-router.fullname" $) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Fails rendering on aggregator values the router would refuse or that cannot work together. */}}
{{- define "global-router.validateAggregator" -}}
{{- $a := .Values.aggregator }}
{{- if not $a.enabled }}
{{- if or $a.wanJoin $a.advertise $a.wanFrom $a.wanKey.key $a.wanKey.existingSecret $a.regionSigningKey.key $a.regionSigningKey.existingSecret }}
{{- fail "aggregator.wanJoin, .advertise, .wanFrom, .wanKey and .regionSigningKey configure an aggregator: set aggregator.enabled=true (or leave them empty)" }}
{{- end }}
{{- else }}
{{- $port := int $a.port }}
{{- if or (lt $port 1) (gt $port 65535) }}{{ fail (printf "aggregator.port %v must be a port number" $a.port) }}{{ end }}
{{- range $name, $p := .Values.ports }}
{{- if eq (int $p) $port }}{{ fail (printf "aggregator.port %d is ports.%s too: the pool of aggregators needs a port of its own" $port $name) }}{{ end }}
{{- end }}
{{- if and $a.advertise (not (regexMatch "^([^:/ ,]+|[[][0-9a-fA-F:]+[]]):[0-9]{1,5}$" (toString $a.advertise))) }}{{ fail (printf "aggregator.advertise %q must be host:port" (toString $a.advertise)) }}{{ end }}
{{- if and $a.advertise (gt (int .Values.replicaCount) 1) }}{{ fail "aggregator.advertise is one address, but replicaCount runs several aggregators: leave it empty (each advertises its pod IP) or run one replica per release" }}{{ end }}
{{- range $a.wanJoin }}
{{- if not (regexMatch "^([^:/ ,]+|[[][0-9a-fA-F:]+[]]):[0-9]{1,5}$" (toString .)) }}{{ fail (printf "aggregator.wanJoin: %q must be host:port" (toString .)) }}{{ end }}
{{- end }}
{{- range $a.wanFrom }}
{{- if not (regexMatch "^[0-9]{1,3}([.][0-9]{1,3}){3}/[0-9]{1,2}$|^[0-9a-fA-F:]+/[0-9]{1,3}$" (toString .)) }}{{ fail (printf "aggregator.wanFrom: %q must be a CIDR, e.g. 10.20.0.0/16" (toString .)) }}{{ end }}
{{- end }}
{{- if and .Values.networkPolicy.enabled $a.wanJoin (not $a.wanFrom) }}
{{- fail "aggregator.wanJoin names other regions' aggregators, but the NetworkPolicy admits aggregator.port only from this release's routers: set aggregator.wanFrom to their CIDRs (and the subnets of a load balancer in front of the port), or networkPolicy.enabled=false" }}
{{- end }}
{{- if not (has $a.service.type (list "ClusterIP" "NodePort" "LoadBalancer")) }}{{ fail (printf "aggregator.service.type %q must be ClusterIP, NodePort or LoadBalancer" (toString $a.service.type)) }}{{ end }}
{{- if and $a.wanKey.key $a.wanKey.existingSecret }}{{ fail "set aggregator.wanKey.key or aggregator.wanKey.existingSecret, not both" }}{{ end }}
{{- with $a.wanKey.key }}
{{- range splitList "\n" (trim .) }}
{{- if not (regexMatch "^[A-Za-z0-9+/]{43}=$" (trim .)) }}{{ fail "aggregator.wanKey.key must hold base64-encoded 32-byte keys, one per line" }}{{ end }}
{{- end }}
{{- end }}
{{- if and $a.regionSigningKey.key $a.regionSigningKey.existingSecret }}{{ fail "set aggregator.regionSigningKey.key or aggregator.regionSigningKey.existingSecret, not both" }}{{ end }}
{{- with $a.regionSigningKey.key }}
{{- if not (or (hasPrefix "-----BEGIN PRIVATE KEY-----" (trim .)) (regexMatch "^[A-Za-z0-9+/]{43}=$" (trim .))) }}{{ fail "aggregator.regionSigningKey.key must be a PEM PRIVATE KEY block (PKCS #8, e.g. Terraform's tls_private_key private_key_pem_pkcs8) or the base64 of a 32-byte Ed25519 seed" }}{{ end }}
{{- end }}
{{- if and .Values.clusterIdentity.required (not (include "global-router.regionSigningSecretName" .)) }}
{{- fail "aggregator.enabled with clusterIdentity.required: every router refuses unsigned region digests, so this region's clusters would reach no other region; set aggregator.regionSigningKey.key or .existingSecret (and register its public key with switchyardctl register-region), or clusterIdentity.required=false" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "global-router.adminSecretName" -}}
{{- default (printf "%s-admin" (include "global-router.fullname" .)) .Values.admin.existingSecret }}
{{- end }}

{{- define "global-router.claimName" -}}
{{- default (printf "%s-data" (include "global-router.fullname" .)) .Values.etcd.persistence.existingClaim }}
{{- end }}

{{/* The public Service's annotations. With TLS on --listen, the AWS load balancer's plain HTTP
health check on the traffic port would be refused (and an HTTPS one too when client certificates
are required): it moves to the metrics port, whose /readyz gives the same answer over plain HTTP. */}}
{{- define "global-router.serviceAnnotations" -}}
{{- $ann := deepCopy (.Values.service.annotations | default dict) }}
{{- $port := "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port" }}
{{- $proto := "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol" }}
{{- if and .Values.tls.secretName (eq (toString (index $ann $port)) "traffic-port") (eq (lower (toString (index $ann $proto))) "http") }}
{{- $_ := set $ann $port (toString .Values.ports.metrics) }}
{{- end }}
{{- toYaml $ann }}
{{- end }}

{{/* The port the public load balancer health-checks (/readyz), as its Service's annotations
say: aws-load-balancer-healthcheck-port, "traffic-port" (the AWS Load Balancer Controller's
default) being --listen's port. Empty when the Service is not a LoadBalancer. */}}
{{- define "global-router.healthCheckPort" -}}
{{- if eq .Values.service.type "LoadBalancer" }}
{{- $ann := include "global-router.serviceAnnotations" . | fromYaml }}
{{- $port := toString (index $ann "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port" | default "traffic-port") }}
{{- if eq $port "traffic-port" }}{{ .Values.ports.http }}
{{- else if regexMatch "^[0-9]{1,5}$" $port }}{{ $port }}
{{- else }}{{ fail (printf "service.annotations: aws-load-balancer-healthcheck-port %q: want traffic-port or a port number" $port) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Fails rendering on values that cannot work together. */}}
{{- define "global-router.validate" -}}
{{- if not .Values.region }}{{ fail "region is required" }}{{ end }}
{{- if and (include "global-router.embeddedEtcd" .) (ne (int .Values.replicaCount) 1) }}
{{- fail "the embedded etcd (etcd.endpoints empty) runs a single member: set replicaCount to 1, or give etcd.endpoints of an external etcd cluster" }}
{{- end }}
{{- if and (include "global-router.embeddedEtcd" .) (or .Values.etcd.tls.secretName .Values.etcd.auth.username .Values.etcd.auth.secretName) }}
{{- fail "etcd.tls and etcd.auth configure the client of an external etcd: give etcd.endpoints" }}
{{- end }}
{{- if ne (not .Values.etcd.auth.username) (not .Values.etcd.auth.secretName) }}
{{- fail "etcd.auth.username and etcd.auth.secretName go together" }}
{{- end }}
{{- if and .Values.tls.requireClientCertificates (not .Values.tls.secretName) }}
{{- fail "tls.requireClientCertificates needs tls.secretName" }}
{{- end }}
{{- if and .Values.admin.tls.requireClientCertificates (not .Values.admin.tls.secretName) }}
{{- fail "admin.tls.requireClientCertificates needs admin.tls.secretName" }}
{{- end }}
{{- if not (has .Values.gossip.profile (list "wan" "lan")) }}{{ fail "gossip.profile must be wan or lan" }}{{ end }}
{{- if and .Values.dnsSync.enabled (not .Values.dnsSync.config) }}{{ fail "dnsSync.enabled needs dnsSync.config (hostedZoneID, recordName, regions)" }}{{ end }}
{{- if not (has .Values.logFormat (list "text" "json")) }}{{ fail "logFormat must be text or json" }}{{ end }}
{{- if not (has .Values.policyUnavailable (list "refuse" "local")) }}{{ fail "policyUnavailable must be refuse or local" }}{{ end }}
{{- include "global-router.validateRegistrations" . }}
{{- include "global-router.validateAggregator" . }}
{{- if not (kindIs "slice" (.Values.passthroughPaths | default list)) }}{{ fail "passthroughPaths must be a list of PATH=json or PATH=multipart entries" }}{{ end }}
{{- include "global-router.validatePassthroughPaths" (dict "paths" .Values.passthroughPaths) }}
{{- if not (regexMatch "^[0-9]+$" (toString (.Values.capacityMap.maxStreams | default 0))) }}{{ fail "capacityMap.maxStreams must be 0 (the router's default) or more" }}{{ end }}
{{- end }}

{{/* Fails rendering on a pass-through list the binaries would refuse: PATH=json or
PATH=multipart entries, each path once, or "none" alone. */}}
{{- define "global-router.validatePassthroughPaths" -}}
{{- $seen := dict }}
{{- range .paths }}
{{- $e := toString . }}
{{- if eq $e "none" }}
{{- if gt (len $.paths) 1 }}{{ fail "passthroughPaths: none stands alone" }}{{ end }}
{{- else if not (regexMatch "^/[A-Za-z0-9._~/-]+=(json|multipart)$" $e) }}
{{- fail (printf "passthroughPaths: %q must be PATH=json or PATH=multipart, PATH starting with /" $e) }}
{{- else }}
{{- $path := regexReplaceAll "=.*$" $e "" }}
{{- if hasKey $seen $path }}{{ fail (printf "passthroughPaths: %s is listed twice" $path) }}{{ end }}
{{- $_ := set $seen $path true }}
{{- end }}
{{- end }}
{{- end }}

{{/* The router's command-line flags, one per line. */}}
{{- define "global-router.args" -}}
- --region={{ .Values.region }}
- --listen=:{{ .Values.ports.http }}
{{- if .Values.tls.secretName }}
- --tls-cert-file=/etc/switchyard/tls/tls.crt
- --tls-key-file=/etc/switchyard/tls/tls.key
{{- if .Values.tls.requireClientCertificates }}
- --tls-client-ca-file=/etc/switchyard/tls/ca.crt
{{- end }}
{{- end }}
- --admin-listen=:{{ .Values.ports.admin }}
- --metrics-listen=:{{ .Values.ports.metrics }}
{{- if include "global-router.embeddedEtcd" . }}
- --data-dir=/var/lib/switchyard
{{- else }}
- --etcd-endpoints={{ join "," .Values.etcd.endpoints }}
- --data-dir=/tmp/switchyard
{{- if .Values.etcd.tls.secretName }}
- --etcd-ca-file=/etc/switchyard/etcd-tls/ca.crt
{{- if .Values.etcd.tls.clientCertificate }}
- --etcd-cert-file=/etc/switchyard/etcd-tls/tls.crt
- --etcd-key-file=/etc/switchyard/etcd-tls/tls.key
{{- end }}
{{- end }}
{{- if .Values.etcd.auth.username }}
- --etcd-username={{ .Values.etcd.auth.username }}
- --etcd-password-file=/etc/switchyard/etcd-auth/password
{{- end }}
{{- end }}
- --gossip-bind=0.0.0.0:{{ .Values.ports.gossip }}
- --gossip-advertise=$(POD_IP):{{ .Values.ports.gossip }}
- --gossip-key-file=/etc/switchyard/gossip/{{ .Values.gossip.secretKey }}
- --gossip-profile={{ .Values.gossip.profile }}
{{- with .Values.gossip.join }}
- --gossip-join={{ join "," . }}
{{- end }}
{{- with .Values.aggregator }}
{{- if .enabled }}
- --gossip-aggregator=true
- --gossip-wan-bind=0.0.0.0:{{ .port }}
- --gossip-wan-advertise={{ .advertise | default (printf "$(POD_IP):%v" .port) }}
{{- with .wanJoin }}
- --gossip-wan-join={{ join "," . }}
{{- end }}
{{- if include "global-router.wanKeySecretName" $ }}
- --gossip-wan-key-file=/etc/switchyard/gossip-wan/{{ .wanKey.secretKey }}
{{- end }}
{{- if include "global-router.regionSigningSecretName" $ }}
- --region-signing-key-file=/etc/switchyard/region-signing/{{ .regionSigningKey.secretKey }}
{{- end }}
{{- end }}
{{- end }}
{{- if .Values.clusterIdentity.required }}
- --require-cluster-identity=true
{{- end }}
{{- if .Values.clusterIdentity.allowCleartextGateways }}
- --allow-cleartext-gateways=true
{{- end }}
{{- with .Values.clusterIdentity.maxClockSkew }}
- --max-clock-skew={{ . }}
{{- end }}
- --admin-token-file=/etc/switchyard/admin/{{ .Values.admin.secretKey }}
{{- if .Values.admin.tls.secretName }}
- --admin-tls-cert-file=/etc/switchyard/admin-tls/tls.crt
- --admin-tls-key-file=/etc/switchyard/admin-tls/tls.key
{{- if .Values.admin.tls.requireClientCertificates }}
- --admin-tls-client-ca-file=/etc/switchyard/admin-tls/ca.crt
{{- end }}
{{- end }}
{{- if .Values.dnsSync.enabled }}
- --dns-sync-config=/etc/switchyard/dns-sync/config.yaml
{{- end }}
{{- with .Values.dnsListen }}
- --dns-listen={{ . }}
{{- end }}
{{- if .Values.gatewayTLS.secretName }}
- --gateway-ca-file=/etc/switchyard/gateway-tls/ca.crt
{{- if .Values.gatewayTLS.clientCertificate }}
- --gateway-cert-file=/etc/switchyard/gateway-tls/tls.crt
- --gateway-key-file=/etc/switchyard/gateway-tls/tls.key
{{- end }}
{{- end }}
- --policy-unavailable={{ .Values.policyUnavailable }}
{{- with .Values.passthroughPaths }}
- --passthrough-paths={{ join "," . }}
{{- end }}
{{- if not .Values.capacityMap.enabled }}
- --capacity-map=false
{{- else if .Values.capacityMap.maxStreams }}
- --capacity-map-max-streams={{ .Values.capacityMap.maxStreams }}
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
- --log-format={{ .Values.logFormat }}
- --log-level={{ .Values.logLevel }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end }}

{{/* GOMEMLIMIT for the container: 90% of resources.limits.memory in MiB, so the Go runtime
collects garbage harder before the kernel's OOM killer would act; empty without a memory limit.
The limit is a Kubernetes quantity: an integer with Ki, Mi, Gi, Ti, k, M, G or T, or bytes. */}}
{{- define "global-router.goMemLimit" -}}
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
