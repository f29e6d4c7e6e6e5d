# Fleet-wide pieces: the shared gossip keyring in Secrets Manager, Route 53 latency records for the
# regional endpoint with health checks on the routers' /readyz, gossip seed records (and, with
# regional gossip pools, the aggregators' seed records) and, for gateways that serve TLS, the
# names they advertise.

locals {
  zone_suffix = join(".", slice(split(".", var.record_name), 1, length(split(".", var.record_name))))
  gossip_keys = var.gossip_keys != "" ? trimspace(var.gossip_keys) : random_bytes.gossip_key.base64

  # Route 53 cannot present a client certificate: with mutual TLS it only checks that the port
  # accepts connections, and the alias records' evaluate_target_health carries readiness.
  health_check_type = { off = "HTTP", on = "HTTPS", mutual = "TCP" }[var.router_tls]
  health_check_port = var.health_check_port != null ? var.health_check_port : (var.router_tls == "off" ? 80 : 443)
}

resource "random_bytes" "gossip_key" {
  length = 32
}

resource "aws_secretsmanager_secret" "gossip" {
  name        = "${var.name}/gossip-keyring"
  description = "Switchyard gossip keyring: base64 32-byte keys, one per line; the first sends."
  tags        = var.tags
}

resource "aws_secretsmanager_secret_version" "gossip" {
  secret_id     = aws_secretsmanager_secret.gossip.id
  secret_string = local.gossip_keys
}

resource "aws_route53_health_check" "router" {
  for_each = var.regions

  fqdn              = each.value.lb_dns_name
  port              = local.health_check_port
  type              = local.health_check_type
  resource_path     = local.health_check_type == "TCP" ? null : var.health_check_path
  request_interval  = var.health_check_interval
  failure_threshold = 3
  tags              = merge(var.tags, { Name = "${var.name}-${each.key}-readyz" })
}

# One latency record per region. Once the routers' Route 53 sync runs (global-router chart
# dnsSync), its leader deletes a drained region's record and restores it on undrain; Terraform
# only creates the records and then leaves them to the sync. A health check's type cannot change
# in place, so changing router_tls replaces the health checks, and their records with them.
resource "aws_route53_record" "regional" {
  for_each = var.regions

  zone_id         = var.zone_id
  name            = var.record_name
  type            = "A"
  set_identifier  = each.key
  health_check_id = aws_route53_health_check.router[each.key].id

  latency_routing_policy {
    region = each.key
  }

  alias {
    name                   = each.value.lb_dns_name
    zone_id                = each.value.lb_zone_id
    evaluate_target_health = true
  }

  lifecycle {
    ignore_changes       = all
    replace_triggered_by = [aws_route53_health_check.router[each.key].id]
  }
}

# gossip-<region>.<zone>: stable seed names the regions join each other through.
resource "aws_route53_record" "gossip_seed" {
  for_each = var.regions

  zone_id = var.zone_id
  name    = "gossip-${each.key}.${local.zone_suffix}"
  type    = "CNAME"
  ttl     = var.record_ttl
  records = [each.value.gossip_lb_dns_name]
}

# gateway-<region>.<zone>: the names gateways with TLS advertise, and their certificates name.
resource "aws_route53_record" "gateway" {
  for_each = var.gateway_records ? var.regions : {}

  zone_id = var.zone_id
  name    = "gateway-${each.key}.${local.zone_suffix}"
  type    = "CNAME"
  ttl     = var.record_ttl
  records = [each.value.gateway_lb_dns_name]

  lifecycle {
    precondition {
      condition     = each.value.gateway_lb_dns_name != null
      error_message = "gateway_records needs every region's gateway_lb_dns_name (the region module's output, with gateway_tls set)."
    }
  }
}

# gossip-wan-<region>.<zone>: the seeds of the pool of aggregators (regional gossip pools).
resource "aws_route53_record" "wan_seed" {
  for_each = var.wan_seed_records ? var.regions : {}

  zone_id = var.zone_id
  name    = "gossip-wan-${each.key}.${local.zone_suffix}"
  type    = "CNAME"
  ttl     = var.record_ttl
  records = [each.value.wan_lb_dns_name]

  lifecycle {
    precondition {
      condition     = each.value.wan_lb_dns_name != null
      error_message = "wan_seed_records needs every region's wan_lb_dns_name (the region module's output, with aggregator set)."
    }
  }
}
