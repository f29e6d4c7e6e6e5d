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
