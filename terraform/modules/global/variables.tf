variable "name" {
  description = "Name of the fleet: prefixes the secret and health checks."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "The name must be 2-31 lower-case letters, digits or dashes, starting with a letter."
  }
}

variable "zone_id" {
  description = "Route 53 hosted zone that holds the regional endpoint record."
  type        = string

  validation {
    condition     = can(regex("^Z[A-Z0-9]+$", var.zone_id))
    error_message = "The zone id must be a Route 53 hosted zone id (Z...)."
  }
}

variable "record_name" {
  description = "Fully qualified name clients use, e.g. api.example.com."
  type        = string

  validation {
    condition     = can(regex("^([a-z0-9]([-a-z0-9]*[a-z0-9])?\\.)+[a-z]{2,}$", var.record_name))
    error_message = "The record name must be a fully qualified lower-case DNS name."
  }
}

variable "regions" {
  description = "Every region's router load balancer, by Switchyard region name: the NLB's DNS name and canonical zone id, the gossip load balancer's DNS name, with gateway_records the gateways' internal load balancer (the region module's gateway_lb_dns_name) and with wan_seed_records the aggregators' (its wan_lb_dns_name)."
  type = map(object({
    lb_dns_name         = string
    lb_zone_id          = string
    gossip_lb_dns_name  = string
    gateway_lb_dns_name = optional(string)
    wan_lb_dns_name     = optional(string)
  }))

  validation {
    condition     = length(var.regions) > 0
    error_message = "Give at least one region."
  }
}

variable "health_check_path" {
  description = "Path of the routers' readiness endpoint probed by Route 53."
  type        = string
  default     = "/readyz"

  validation {
    condition     = startswith(var.health_check_path, "/")
    error_message = "The path must start with /."
  }
}

variable "health_check_port" {
  description = "Port of the router load balancer probed by Route 53. Null: 80, or 443 with router_tls."
  type        = number
  default     = null

  validation {
    condition     = var.health_check_port == null ? true : var.health_check_port > 0 && var.health_check_port < 65536
    error_message = "The port must be between 1 and 65535."
  }
}

variable "router_tls" {
  description = "TLS on the routers' load balancers, as every region module's router_tls output reports it: off (Route 53 checks /readyz over HTTP on 80), on (over HTTPS on 443, without verifying the certificate) or mutual (the routers require client certificates, which Route 53 cannot present: it checks that 443 accepts TCP connections, and each latency record still follows its load balancer's target health, checked on the routers' /readyz)."
  type        = string
  default     = "off"

  validation {
    condition     = contains(["off", "on", "mutual"], var.router_tls)
    error_message = "router_tls must be off, on or mutual."
  }
}

variable "gateway_records" {
  description = "Keep gateway-<region>.<zone> CNAME records to each region's gateway_lb_dns_name: the names gateways with TLS advertise (the region module's gateway_tls.advertise_url is then https://gateway-<region>.<zone>:8080, and the gateways' certificates name it). Every region must then give gateway_lb_dns_name."
  type        = bool
  default     = false
}

variable "wan_seed_records" {
  description = "Keep gossip-wan-<region>.<zone> CNAME records to each region's wan_lb_dns_name: the seeds of the pool of aggregators that the regions' aggregator.wan_join name (regional gossip pools, port 7947). Every region must then give wan_lb_dns_name."
  type        = bool
  default     = false
}

variable "health_check_interval" {
  description = "Seconds between Route 53 health checks: 10 (fast) or 30 (standard)."
  type        = number
  default     = 10

  validation {
    condition     = contains([10, 30], var.health_check_interval)
    error_message = "Route 53 supports 10 or 30 seconds."
  }
}

variable "record_ttl" {
  description = "TTL of the gossip seed records, in seconds (the latency records are aliases)."
  type        = number
  default     = 60

  validation {
    condition     = var.record_ttl >= 5 && var.record_ttl <= 3600
    error_message = "The TTL must be between 5 and 3600 seconds."
  }
}

variable "gossip_keys" {
  description = "Gossip keyring to store (base64 32-byte keys, one per line, the sending key first). Empty: one key is generated."
  type        = string
  default     = ""
  sensitive   = true

  validation {
    condition     = var.gossip_keys == "" || alltrue([for k in split("\n", trimspace(var.gossip_keys)) : length(try(base64decode(trimspace(k)), "")) == 32])
    error_message = "Every line must be a base64-encoded 32-byte key."
  }
}

variable "etcd" {
  description = "Optional placement of the fleet's etcd cluster: the region that hosts it and its client URLs, shared by every router. Null: each region's router uses its own embedded etcd."
  type = object({
    region    = string
    endpoints = list(string)
  })
  default = null

  validation {
    condition     = var.etcd == null || try(length(var.etcd.endpoints) > 0 && alltrue([for e in var.etcd.endpoints : can(regex("^https?://", e))]), false)
    error_message = "etcd.endpoints must be a non-empty list of http:// or https:// URLs."
  }
}

variable "tags" {
  description = "Tags added to every AWS resource."
  type        = map(string)
  default     = {}
}
