variable "name" {
  description = "Fleet name; each region's deployment is named <name>-<short region>."
  type        = string
  default     = "sy"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,12}$", var.name))
    error_message = "The name must be 2-13 lower-case letters, digits or dashes, starting with a letter."
  }
}

variable "zone_id" {
  description = "Route 53 hosted zone id of record_name's zone."
  type        = string
}

variable "record_name" {
  description = "The fleet's client name, e.g. api.example.com."
  type        = string
}

variable "image_tag" {
  description = "Tag of the Switchyard images; empty: the charts' appVersion."
  type        = string
  default     = ""
}

variable "etcd_endpoints" {
  description = "Client URLs of an etcd cluster shared by every router (e.g. three members in us-east-1). Empty: each region embeds its own etcd, so policies and drains are per region."
  type        = list(string)
  default     = []
}

variable "etcd_tls_secret_name" {
  description = "With etcd_endpoints: the Secret, in every region's namespace, holding the etcd CA (ca.crt) and the routers' client certificate (tls.crt, tls.key). Empty: no client certificate."
  type        = string
  default     = ""
}

variable "router_tls" {
  description = "TLS on every region's router OpenAI port: the Secret, in every region's namespace, whose tls.crt and tls.key name record_name, and whether clients must present certificates signed by its ca.crt. The load balancers then listen on 443 and Route 53 checks them over HTTPS (TCP with client certificates). Null: plain HTTP on 80."
  type = object({
    secret_name                 = string
    require_client_certificates = optional(bool, false)
  })
  default = null
}

variable "router_admin_tls" {
  description = "TLS on every router's admin API: the Secret, in every region's namespace, whose tls.crt and tls.key name localhost (kubectl port-forward) and the admin Service, whether switchyardctl must present a certificate signed by its ca.crt, and then (with cluster_identity) client_secret_name, the Secret whose tls.crt and tls.key the registration Job presents. Null: plain HTTP inside the cluster."
  type = object({
    secret_name                 = string
    require_client_certificates = optional(bool, false)
    client_secret_name          = optional(string, "")
  })
  default = null
}

variable "gateway_tls" {
  description = "TLS between the routers and every region's gateways: the gateways serve their HTTP port with the Secret secret_name (tls.crt and tls.key naming gateway-<region>.<zone>; with require_client_certificates, ca.crt signs the routers' certificates) and advertise https://gateway-<region>.<zone>:8080, a record to an internal load balancer; the routers verify them with router_secret_name's ca.crt and, with require_client_certificates, present its tls.crt and tls.key. Both Secrets in every region's namespace. Null: plain HTTP to the gateway pods over the peering."
  type = object({
    secret_name                 = string
    require_client_certificates = optional(bool, false)
    router_secret_name          = string
  })
  default = null
}

variable "gpu_node_groups" {
  description = "GPU node groups per region (see the region module); null keeps the module's p5 and g5 examples."
  type = map(object({
    instance_types = list(string)
    min_size       = number
    desired_size   = number
    max_size       = number
    capacity_type  = optional(string, "ON_DEMAND")
    disk_size_gb   = optional(number, 500)
  }))
  default = null
}

variable "cluster_identity" {
  description = "Sign every cluster's capacity summaries with an Ed25519 key Terraform generates, register every cluster with every region's routers, and have the routers accept only registered clusters' signed summaries. Without gateway_tls, the gateways then advertise http://gateway-<region>.<zone>:8080 through an internal load balancer (a URL that can be registered) instead of their pod addresses. false: unregistered, unverified summaries (compatibility mode)."
  type        = bool
  default     = true
}

variable "previous_signing_public_keys" {
  description = "While a cluster's signing key rotates: the PEM public keys (the region's former signing_public_key_pem) to keep registered beside the new key, by region. See docs/deploy.md, cluster identity."
  type        = map(list(string))
  default     = {}
}

variable "regional_pools" {
  description = "Give each region a gossip pool of its own (LAN timings for the routers), and make its routers the region's aggregators: they join the other regions' aggregators on port 7947 through the gossip-wan-<region>.<zone> records and sign the region's digests with a region key Terraform generates (output region_registrations: register each with every region's routers, docs/deploy.md, regional gossip pools). Only 7947 and the gateways' 8080 are then open between the regions. false: one gossip pool across the three regions."
  type        = bool
  default     = false
}
