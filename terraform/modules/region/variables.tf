variable "name" {
  description = "Name of this region's deployment: prefixes the VPC, the EKS cluster and the load balancers (e.g. \"sy-use1\")."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,20}$", var.name))
    error_message = "The name must be 2-21 lower-case letters, digits or dashes, starting with a letter (load balancer names are limited to 32 characters)."
  }
}

variable "region" {
  description = "AWS region of this deployment; also the Switchyard region name (--region)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "The region must be an AWS region name such as us-east-1."
  }
}

variable "cluster_name" {
  description = "Switchyard cluster name of this region's EKS cluster (--cluster); unique in the fleet. Empty: the deployment name."
  type        = string
  default     = ""

  validation {
    condition     = var.cluster_name == "" || can(regex("^[a-z0-9][a-z0-9-]{0,62}$", var.cluster_name))
    error_message = "The cluster name must be a DNS label."
  }
}

variable "vpc_cidr" {
  description = "CIDR block of the VPC. Regions must not overlap: gossip reaches pods across regions by their VPC addresses."
  type        = string
  default     = "10.0.0.0/16"

  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0)) && try(tonumber(split("/", var.vpc_cidr)[1]) <= 20, false)
    error_message = "The VPC CIDR must be a valid IPv4 block of /20 or larger."
  }
}

variable "availability_zone_count" {
  description = "Availability zones used for subnets and nodes."
  type        = number
  default     = 3

  validation {
    condition     = var.availability_zone_count >= 2 && var.availability_zone_count <= 4
    error_message = "Use between 2 and 4 availability zones (EKS needs two)."
  }
}

variable "kubernetes_version" {
  description = "EKS Kubernetes version."
  type        = string
  default     = "1.34"

  validation {
    condition     = can(regex("^1\\.[0-9]{2}$", var.kubernetes_version))
    error_message = "The Kubernetes version must look like 1.34."
  }
}

variable "system_instance_types" {
  description = "Instance types of the node group that runs the gateways and routers."
  type        = list(string)
  default     = ["m6i.xlarge"]

  validation {
    condition     = length(var.system_instance_types) > 0
    error_message = "Give at least one instance type."
  }
}

variable "gpu_node_groups" {
  description = "GPU node groups for the model servers, by name. Nodes are labelled switchyard.dev/gpu=<name> and tainted nvidia.com/gpu=true:NoSchedule."
  type = map(object({
    instance_types = list(string)
    min_size       = number
    desired_size   = number
    max_size       = number
    capacity_type  = optional(string, "ON_DEMAND")
    disk_size_gb   = optional(number, 500)
  }))
  nullable = false
  default = {
    h100 = { instance_types = ["p5.48xlarge"], min_size = 0, desired_size = 1, max_size = 4 }
    a10g = { instance_types = ["g5.12xlarge"], min_size = 0, desired_size = 2, max_size = 8 }
  }

  validation {
    condition = alltrue([for g in values(var.gpu_node_groups) :
      g.min_size >= 0 && g.min_size <= g.desired_size && g.desired_size <= g.max_size && length(g.instance_types) > 0 &&
    contains(["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"], g.capacity_type)])
    error_message = "Each GPU node group needs instance types, 0 <= min_size <= desired_size <= max_size, and capacity_type ON_DEMAND, SPOT or CAPACITY_BLOCK."
  }
}

variable "chart_dir" {
  description = "Directory holding the cluster-gateway and global-router charts. Empty: deploy/charts of this repository."
  type        = string
  default     = ""
}

variable "image_tag" {
  description = "Tag of the Switchyard images. Empty: each chart's appVersion."
  type        = string
  default     = ""
}

variable "namespace" {
  description = "Kubernetes namespace of the gateway and the router."
  type        = string
  default     = "switchyard"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", var.namespace))
    error_message = "The namespace must be a DNS label."
  }
}

variable "pool_name" {
  description = "InferencePool the gateway follows (create it with your model-server deployment)."
  type        = string
  default     = "inference-pool"
}

variable "pool_namespace" {
  description = "Namespace of the InferencePool."
  type        = string
  default     = "inference"
}

variable "gateway_profile" {
  description = "Scheduling profile of the gateway."
  type        = string
  default     = "default"

  validation {
    condition     = contains(["default", "gie-default", "round-robin", "least-request", "random"], var.gateway_profile)
    error_message = "The profile must be default, gie-default, round-robin, least-request or random."
  }
}

variable "gossip_key" {
  description = "Gossip keyring shared by the whole fleet: base64 32-byte keys, one per line (from the global module)."
  type        = string
  sensitive   = true

  validation {
    condition     = length(trimspace(var.gossip_key)) >= 44
    error_message = "The gossip keyring must hold at least one base64-encoded 32-byte key."
  }
}

variable "gossip_join" {
  description = "Gossip seeds in other regions, host:port."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for s in var.gossip_join : can(regex("^[^:]+:[0-9]+$", s))])
    error_message = "Each gossip seed must be host:port."
  }
}

variable "etcd_endpoints" {
  description = "Client URLs of the fleet's etcd cluster. Empty: the router runs an embedded etcd (one replica, this region only)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for e in var.etcd_endpoints : can(regex("^https?://", e))])
    error_message = "etcd endpoints must be http:// or https:// URLs."
  }
}

variable "etcd_tls_secret_name" {
  description = "Kubernetes Secret (in the namespace) with the external etcd's ca.crt and the router's client tls.crt and tls.key, e.g. a cert-manager Certificate's. Empty: https endpoints are verified against the image's system roots, with no client certificate."
  type        = string
  default     = ""

  validation {
    condition     = var.etcd_tls_secret_name == "" || can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.etcd_tls_secret_name))
    error_message = "etcd_tls_secret_name must be a Kubernetes object name."
  }
}

variable "etcd_auth" {
  description = "etcd user for the routers when etcd's authentication is on, and the Kubernetes Secret (in the namespace) whose key password holds its password. Null: no etcd user."
  type = object({
    username    = string
    secret_name = string
  })
  default = null

  validation {
    condition     = var.etcd_auth == null || try(length(var.etcd_auth.username) > 0 && !strcontains(var.etcd_auth.username, ":") && can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.etcd_auth.secret_name)), false)
    error_message = "etcd_auth needs a username without ':' and a Kubernetes Secret name."
  }
}

variable "router_tls" {
  description = "TLS on the router's OpenAI port (--listen), end to end: the Kubernetes Secret (in the namespace) whose tls.crt and tls.key it serves, naming the host clients use (the fleet's client name, e.g. api.example.com), and whether clients must present certificates signed by its ca.crt. The load balancer then listens on 443 and passes TCP through; it health-checks /readyz of the routers' plain metrics port. Null: plain HTTP on port 80 (TLS terminated in front, if at all)."
  type = object({
    secret_name                 = string
    require_client_certificates = optional(bool, false)
  })
  default = null

  validation {
    condition     = var.router_tls == null || can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.router_tls.secret_name))
    error_message = "router_tls.secret_name must be a Kubernetes object name (lower-case letters, digits, '-' and '.')."
  }
}

variable "router_admin_tls" {
  description = "TLS on the router's admin API (switchyardctl): the Kubernetes Secret (in the namespace) whose tls.crt and tls.key it serves, naming the host switchyardctl dials (localhost for kubectl port-forward, router-global-router-admin.<namespace>.svc in the cluster, which the registration Job dials and verifies with the Secret's ca.crt), whether clients must present certificates signed by its ca.crt (the bearer token is still required), and then client_secret_name, the Secret whose tls.crt and tls.key the registration Job presents (needed with cluster_registrations). Null: plain HTTP/1.1 and h2c inside the cluster."
  type = object({
    secret_name                 = string
    require_client_certificates = optional(bool, false)
    client_secret_name          = optional(string, "")
  })
  default = null

  validation {
    condition     = var.router_admin_tls == null || can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.router_admin_tls.secret_name))
    error_message = "router_admin_tls.secret_name must be a Kubernetes object name (lower-case letters, digits, '-' and '.')."
  }

  validation {
    condition     = var.router_admin_tls == null || try(var.router_admin_tls.client_secret_name == "" || can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.router_admin_tls.client_secret_name)), false)
    error_message = "router_admin_tls.client_secret_name must be empty or a Kubernetes object name (lower-case letters, digits, '-' and '.')."
  }
}

variable "router_gateway_tls" {
  description = "How this region's routers forward to gateways that serve TLS (gateway_tls, in any region): the Kubernetes Secret (in the namespace) whose ca.crt verifies every region's gateway certificates and, with client_certificate, whose tls.crt and tls.key the routers present to gateways that require client certificates. Set it in every region as soon as any region sets gateway_tls. Null: https gateways are verified against the image's system roots, with no client certificate."
  type = object({
    secret_name        = string
    client_certificate = optional(bool, true)
  })
  default = null

  validation {
    condition     = var.router_gateway_tls == null || can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.router_gateway_tls.secret_name))
    error_message = "router_gateway_tls.secret_name must be a Kubernetes object name (lower-case letters, digits, '-' and '.')."
  }
}

variable "gateway_tls" {
  description = "TLS on the gateways' HTTP port (8080), which the routers of every region forward to: the Kubernetes Secret (in the namespace) whose tls.crt and tls.key the gateways serve, whether routers must present client certificates signed by its ca.crt, and advertise_url, the https:// URL routers use (--advertise-url). Its host must be a name the certificate covers (a pod address cannot be) that resolves, from every region, to the internal load balancer this module then puts in front of the HTTP port alone (output gateway_lb_dns_name; it listens on 8080, so the URL ends in :8080). Every region's routers need router_gateway_tls to trust the certificate. Null: routers reach the gateway pods' addresses over plain HTTP."
  type = object({
    secret_name                 = string
    require_client_certificates = optional(bool, false)
    advertise_url               = string
  })
  default = null

  validation {
    condition     = var.gateway_tls == null || can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.gateway_tls.secret_name))
    error_message = "gateway_tls.secret_name must be a Kubernetes object name (lower-case letters, digits, '-' and '.')."
  }

  validation {
    condition     = var.gateway_tls == null || can(regex("^https://[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?/?$", var.gateway_tls.advertise_url))
    error_message = "gateway_tls.advertise_url must be https://HOST[:PORT] with a lower-case DNS name its certificate covers, e.g. https://gateway-us-east-1.example.com:8080."
  }
}

variable "router_replicas" {
  description = "Router replicas; forced to 1 with the embedded etcd."
  type        = number
  default     = 2

  validation {
    condition     = var.router_replicas >= 1 && var.router_replicas <= 10
    error_message = "Run between 1 and 10 routers."
  }
}

variable "load_balancer_scheme" {
  description = "Scheme of the router's Network Load Balancer."
  type        = string
  default     = "internet-facing"

  validation {
    condition     = contains(["internet-facing", "internal"], var.load_balancer_scheme)
    error_message = "The scheme must be internet-facing or internal."
  }
}

variable "lb_controller_chart_version" {
  description = "Version of the AWS Load Balancer Controller chart (eks-charts), which creates the routers' NLBs."
  type        = string
  default     = "1.13.0"
}

variable "tags" {
  description = "Tags added to every AWS resource."
  type        = map(string)
  default     = {}
}

variable "peer_cidrs" {
  description = "VPC CIDRs of the other regions, allowed to reach gossip (7946) and the gateway proxy (8080) on this region's pods and, with gateway_tls, through the gateways' internal load balancer."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.peer_cidrs : can(cidrhost(c, 0))])
    error_message = "Each peer CIDR must be a valid IPv4 block."
  }
}

variable "gateway_advertise_url" {
  description = "Without gateway_tls: an http:// URL the gateways advertise instead of their pod addresses, so this cluster can be registered (output cluster_registration). Its host must resolve, from every region, to the internal load balancer this module then puts in front of the gateways' HTTP port (output gateway_lb_dns_name; it listens on 8080, so the URL ends in :8080), e.g. http://gateway-us-east-1.example.com:8080, a record the global module keeps with gateway_records. Routers then need cleartext gateway URLs allowed, which the module sets when a registration uses one. Empty: the pod addresses (or gateway_tls.advertise_url)."
  type        = string
  default     = ""
  nullable    = false

  validation {
    condition     = var.gateway_advertise_url == "" || can(regex("^http://[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?/?$", var.gateway_advertise_url))
    error_message = "gateway_advertise_url must be http://HOST[:PORT] with a lower-case DNS name (gateway_tls.advertise_url is the https one), e.g. http://gateway-us-east-1.example.com:8080."
  }
}

variable "cluster_registrations" {
  description = "Every cluster of the fleet the routers of this region must accept (every region module's cluster_registration output, this one's included): cluster, region, the exact gateway URLs, allowed models (empty: any) and PEM public keys. A Helm hook Job of the router chart registers them after each apply (switchyardctl register-cluster --replace: created, updated when changed, left alone otherwise); with the embedded etcd every region keeps its own registrations, so give every region the whole list. A cluster removed from the list stays registered until switchyardctl revoke-cluster. Empty: nothing is registered by the module."
  type = list(object({
    cluster      = string
    region       = string
    gateway_urls = list(string)
    models       = optional(list(string), [])
    public_keys  = list(string)
  }))
  default  = []
  nullable = false

  validation {
    condition     = length(distinct([for r in var.cluster_registrations : r.cluster])) == length(var.cluster_registrations)
    error_message = "cluster_registrations lists a cluster twice."
  }

  validation {
    condition = alltrue([for r in var.cluster_registrations : can(regex("^[a-z0-9][a-z0-9-]{0,62}$", r.cluster)) && length(r.gateway_urls) > 0 && length(r.public_keys) > 0 &&
    alltrue([for u in r.gateway_urls : can(regex("^https?://[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?$", u))])])
    error_message = "Each of cluster_registrations needs a cluster name (a DNS label), at least one gateway URL, each http(s)://HOST[:PORT] with no path, and at least one public key."
  }
}

variable "require_cluster_identity" {
  description = "Routers accept capacity summaries only from registered clusters, even while none is registered (--require-cluster-identity). Null: on when cluster_registrations lists any cluster, off otherwise (compatibility mode: with nothing registered, every summary is accepted unverified)."
  type        = bool
  default     = null
}

variable "cluster_models" {
  description = "Base models and LoRA adapters this cluster may advertise, for its registration (output cluster_registration). Empty: any model."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for m in var.cluster_models : length(m) > 0 && length(m) <= 256 && !can(regex("[, ]", m))])
    error_message = "Each model name must be 1-256 characters without commas or spaces."
  }
}

variable "previous_signing_public_keys" {
  description = "PEM public keys registered for this cluster besides its current signing key's, while the key rotates (see docs/deploy.md, cluster identity): the old key stays accepted until every gateway signs with the new one."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for k in var.previous_signing_public_keys : startswith(trimspace(k), "-----BEGIN PUBLIC KEY-----")])
    error_message = "Each previous signing public key must be a PEM PUBLIC KEY block (the signing_public_key_pem output)."
  }
}

variable "aggregator" {
  description = "Regional gossip pools (docs/deploy.md, regional gossip pools): this region's gateways and routers gossip only among themselves (LAN timings for the routers; leave gossip_join empty) and the routers are the region's aggregators, which join the pool of aggregators on port 7947 (TCP and UDP, opened to peer_cidrs) through an internal load balancer (output wan_lb_dns_name), seeded by wan_join (the other regions' aggregators, host:port, e.g. gossip-wan-<region>.<zone>:7947), and sign the region's digests with an Ed25519 region key generated here (output region_registration, to register with switchyardctl register-region in every region). Null: one gossip pool across the regions (gossip_join)."
  type = object({
    wan_join = optional(list(string), [])
  })
  default = null

  validation {
    condition     = var.aggregator == null || try(alltrue([for s in var.aggregator.wan_join : can(regex("^[^:/ ,]+:[0-9]{1,5}$", s))]), false)
    error_message = "Each of aggregator.wan_join must be host:port, e.g. gossip-wan-us-west-2.example.com:7947."
  }
}
