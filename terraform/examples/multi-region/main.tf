# Three Switchyard regions wired into one fleet: each region's routers and gateways gossip with the
# others' through VPC peering, and Route 53 sends clients to the nearest ready region.

locals {
  regions = {
    "us-east-1" = { short = "use1", cidr = "10.10.0.0/16" }
    "us-west-2" = { short = "usw2", cidr = "10.20.0.0/16" }
    "eu-west-1" = { short = "euw1", cidr = "10.30.0.0/16" }
  }
  zone_suffix = join(".", slice(split(".", var.record_name), 1, length(split(".", var.record_name))))
  # Every region joins the others' gossip through the seed records the global module keeps; with
  # regional_pools each region's gossip stays inside it, and its routers, the region's
  # aggregators, join the other regions' aggregators through the gossip-wan-<region> records.
  seeds       = { for r, _ in local.regions : r => "gossip-${r}.${local.zone_suffix}:7946" }
  gossip_join = { for r, _ in local.regions : r => var.regional_pools ? [] : [for o, s in local.seeds : s if o != r] }
  wan_seeds   = { for r, _ in local.regions : r => "gossip-wan-${r}.${local.zone_suffix}:7947" }
  aggregator = { for r, _ in local.regions : r => var.regional_pools ? {
    wan_join = [for o, s in local.wan_seeds : s if o != r]
  } : null }
  peer_cidrs = { for r, _ in local.regions : r => [for o, v in local.regions : v.cidr if o != r] }
  az_count   = 3
  etcd       = length(var.etcd_endpoints) > 0 ? { region = "us-east-1", endpoints = var.etcd_endpoints } : null

  # With gateway_tls, each region's gateways advertise the gateway-<region> record the global
  # module keeps, and every router trusts (and, with client certificates, authenticates to) them.
  router_tls = var.router_tls == null ? "off" : (var.router_tls.require_client_certificates ? "mutual" : "on")
  gateway_tls = { for r, _ in local.regions : r => var.gateway_tls == null ? null : {
    secret_name                 = var.gateway_tls.secret_name
    require_client_certificates = var.gateway_tls.require_client_certificates
    advertise_url               = "https://gateway-${r}.${local.zone_suffix}:8080"
  } }
  router_gateway_tls = var.gateway_tls == null ? null : {
    secret_name        = var.gateway_tls.router_secret_name
    client_certificate = var.gateway_tls.require_client_certificates
  }

  # With cluster_identity, gateways without TLS advertise http://gateway-<region>.<zone>:8080
  # (the same records and internal load balancers as with TLS), so every cluster has a stable URL
  # to register; every region's routers register all three clusters (each region module's
  # cluster_registration: the URL and the public key of the key it generated) and accept only
  # their signed summaries.
  gateway_advertise_url = { for r, _ in local.regions : r => var.cluster_identity && var.gateway_tls == null ? "http://gateway-${r}.${local.zone_suffix}:8080" : "" }
  cluster_registrations = var.cluster_identity ? [
    module.us_east_1.cluster_registration,
    module.us_west_2.cluster_registration,
    module.eu_west_1.cluster_registration,
  ] : []
  previous_signing_public_keys = { for r, _ in local.regions : r => try(var.previous_signing_public_keys[r], []) }
}

provider "aws" {
  region = "us-east-1"
}

provider "aws" {
  alias  = "use1"
  region = "us-east-1"
}

provider "aws" {
  alias  = "usw2"
  region = "us-west-2"
}

provider "aws" {
  alias  = "euw1"
  region = "eu-west-1"
}

module "global" {
  source = "../../modules/global"

  name            = var.name
  zone_id         = var.zone_id
  record_name     = var.record_name
  etcd            = local.etcd
  router_tls      = local.router_tls
  gateway_records = var.gateway_tls != null || var.cluster_identity
  # With regional_pools: gossip-wan-<region>.<zone>, the seeds of the pool of aggregators.
  wan_seed_records = var.regional_pools
  regions = {
    "us-east-1" = { lb_dns_name = module.us_east_1.router_lb_dns_name, lb_zone_id = module.us_east_1.router_lb_zone_id, gossip_lb_dns_name = module.us_east_1.gossip_lb_dns_name, gateway_lb_dns_name = module.us_east_1.gateway_lb_dns_name, wan_lb_dns_name = module.us_east_1.wan_lb_dns_name }
    "us-west-2" = { lb_dns_name = module.us_west_2.router_lb_dns_name, lb_zone_id = module.us_west_2.router_lb_zone_id, gossip_lb_dns_name = module.us_west_2.gossip_lb_dns_name, gateway_lb_dns_name = module.us_west_2.gateway_lb_dns_name, wan_lb_dns_name = module.us_west_2.wan_lb_dns_name }
    "eu-west-1" = { lb_dns_name = module.eu_west_1.router_lb_dns_name, lb_zone_id = module.eu_west_1.router_lb_zone_id, gossip_lb_dns_name = module.eu_west_1.gossip_lb_dns_name, gateway_lb_dns_name = module.eu_west_1.gateway_lb_dns_name, wan_lb_dns_name = module.eu_west_1.wan_lb_dns_name }
  }
}
