output "router_endpoint" {
  description = "The region's OpenAI-compatible endpoint: its router load balancer (https with router_tls, whose certificate names the client name rather than this load balancer: check it with curl --resolve or --connect-to)."
  value       = "${local.router_tls_mode == "off" ? "http" : "https"}://${data.aws_lb.router.dns_name}"
}

output "router_tls" {
  description = "TLS on the router's load balancer, as the global module's router_tls takes it: off (HTTP on 80), on (HTTPS on 443) or mutual (HTTPS on 443 with client certificates)."
  value       = local.router_tls_mode
}

output "router_lb_dns_name" {
  description = "DNS name of the router Network Load Balancer (target of the Route 53 latency record)."
  value       = data.aws_lb.router.dns_name
}

output "router_lb_zone_id" {
  description = "Canonical hosted zone id of the router load balancer, for Route 53 aliases."
  value       = data.aws_lb.router.zone_id
}

output "gateway_lb_dns_name" {
  description = "DNS name of the internal load balancer in front of the gateways' HTTP port, which the host of gateway_tls.advertise_url or gateway_advertise_url must resolve to (the global module's gateway records); null with neither."
  value       = one(data.aws_lb.gateway[*].dns_name)
}

output "gossip_lb_dns_name" {
  description = "DNS name of the internal gossip load balancer other regions join through."
  value       = data.aws_lb.gossip.dns_name
}

output "cluster_name" {
  description = "EKS cluster name (also the Switchyard cluster name unless cluster_name was set)."
  value       = aws_eks_cluster.this.name
}

output "cluster_endpoint" {
  description = "EKS API server endpoint."
  value       = aws_eks_cluster.this.endpoint
}

output "cluster_certificate_authority" {
  description = "Base64 certificate authority of the EKS API server."
  value       = aws_eks_cluster.this.certificate_authority[0].data
}

output "vpc_id" {
  description = "VPC id, for peering the regions."
  value       = aws_vpc.this.id
}

output "vpc_cidr" {
  description = "VPC CIDR block."
  value       = aws_vpc.this.cidr_block
}

output "private_route_table_ids" {
  description = "Private route tables, for routes to the other regions' VPCs."
  value       = aws_route_table.private[*].id
}

output "signing_public_key_pem" {
  description = "PEM public key (PKIX) of this cluster's summary signing key, which the routers must have registered."
  value       = tls_private_key.signing.public_key_pem
}

output "cluster_registration" {
  description = "This cluster's registration for every region's cluster_registrations: name, region, the URL its gateways advertise, allowed models and public keys (the current signing key's, then previous_signing_public_keys). Null when the gateways advertise their pod addresses (neither gateway_tls nor gateway_advertise_url), which cannot be registered."
  value = local.gateway_url == "" ? null : {
    cluster      = local.cluster_name
    region       = var.region
    gateway_urls = [local.gateway_url]
    models       = var.cluster_models
    public_keys  = concat([tls_private_key.signing.public_key_pem], var.previous_signing_public_keys)
  }
}

output "wan_lb_dns_name" {
  description = "With aggregator: DNS name of the internal load balancer in front of the aggregators' WAN port (7947), the seed other regions' aggregator.wan_join name (the global module's wan_seed_records); null without."
  value       = one(data.aws_lb.wan[*].dns_name)
}

output "region_signing_public_key_pem" {
  description = "With aggregator: PEM public key (PKIX) of the region key that signs this region's digests; null without."
  value       = one(tls_private_key.region_signing[*].public_key_pem)
}

output "region_registration" {
  description = "With aggregator: this region's registration, region and public keys, to register with every region's routers (switchyardctl register-region REGION --public-key-file=FILE; see docs/deploy.md, regional gossip pools); null without."
  value = local.aggregator ? {
    region      = var.region
    public_keys = [one(tls_private_key.region_signing[*].public_key_pem)]
  } : null
}
