output "endpoint" {
  description = "The fleet's client endpoint (latency-routed to the nearest ready region)."
  value       = "${var.router_tls == "off" ? "http" : "https"}://${var.record_name}"
}

output "gateway_names" {
  description = "The name each region's gateways advertise with TLS (gateway_records), by region; empty without gateway_records."
  value       = { for r, rec in aws_route53_record.gateway : r => rec.name }
}

output "wan_seeds" {
  description = "With wan_seed_records: each region's seed of the pool of aggregators, host:port, by region; empty without."
  value       = { for r, rec in aws_route53_record.wan_seed : r => "${rec.name}:7947" }
}

output "gossip_keys" {
  description = "The gossip keyring every gateway and router uses."
  value       = local.gossip_keys
  sensitive   = true
}

output "gossip_secret_arn" {
  description = "ARN of the Secrets Manager secret holding the gossip keyring."
  value       = aws_secretsmanager_secret.gossip.arn
}

output "health_check_ids" {
  description = "Route 53 health check id per region."
  value       = { for r, hc in aws_route53_health_check.router : r => hc.id }
}

output "etcd_endpoints" {
  description = "etcd client URLs every router uses; empty when each region embeds its own."
  value       = var.etcd == null ? [] : var.etcd.endpoints
}

output "dns_sync_config" {
  description = "Configuration of the routers' Route 53 sync (global-router chart value dnsSync.config) matching these records."
  value = {
    hostedZoneID = var.zone_id
    recordName   = var.record_name
    regions = { for r, v in var.regions : r => {
      aliasDNSName         = v.lb_dns_name
      aliasHostedZoneID    = v.lb_zone_id
      evaluateTargetHealth = true
      healthCheckID        = aws_route53_health_check.router[r].id
    } }
  }
}
