output "endpoint" {
  description = "The fleet's client endpoint: Route 53 latency records to the nearest ready region."
  value       = module.global.endpoint
}

output "router_endpoints" {
  description = "Each region's router load balancer."
  value = {
    "us-east-1" = module.us_east_1.router_endpoint
    "us-west-2" = module.us_west_2.router_endpoint
    "eu-west-1" = module.eu_west_1.router_endpoint
  }
}

output "gossip_secret_arn" {
  description = "Secrets Manager secret holding the gossip keyring (rotate it here)."
  value       = module.global.gossip_secret_arn
}

output "kubeconfig_commands" {
  description = "Commands that add each region's EKS cluster to your kubeconfig."
  value = {
    "us-east-1" = "aws eks update-kubeconfig --region us-east-1 --name ${module.us_east_1.cluster_name}"
    "us-west-2" = "aws eks update-kubeconfig --region us-west-2 --name ${module.us_west_2.cluster_name}"
    "eu-west-1" = "aws eks update-kubeconfig --region eu-west-1 --name ${module.eu_west_1.cluster_name}"
  }
}

output "dns_sync_config" {
  description = "Configuration of the routers' Route 53 sync (global-router chart value dnsSync.config)."
  value       = module.global.dns_sync_config
}

output "gateway_names" {
  description = "With gateway_tls: the name each region's gateways advertise, which their certificates must cover."
  value       = module.global.gateway_names
}

output "signing_public_keys" {
  description = "Each region's cluster's summary signing public key (PEM), as registered with the routers."
  value = {
    "us-east-1" = module.us_east_1.signing_public_key_pem
    "us-west-2" = module.us_west_2.signing_public_key_pem
    "eu-west-1" = module.eu_west_1.signing_public_key_pem
  }
}

output "region_registrations" {
  description = "With regional_pools: each region's registration (region, public keys of its region key), to register with every region's routers: switchyardctl register-region REGION --public-key-file=FILE (docs/deploy.md, regional gossip pools)."
  value = var.regional_pools ? {
    "us-east-1" = module.us_east_1.region_registration
    "us-west-2" = module.us_west_2.region_registration
    "eu-west-1" = module.eu_west_1.region_registration
  } : {}
}
