# Fleet-wide pieces: the shared gossip keyring in Secrets Manager, Route 53 latency records for the
# regional endpoint with health checks on the routers' /readyz, and gossip seed records.

locals {
  zone_suffix = join(".", slice(split(".", var.record_name), 1, length(split(".", var.record_name))))
  gossip_keys = var.gossip_keys != "" ? trimspace(var.gossip_keys) : random_bytes.gossip_key.base64
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
  port              = var.health_check_port
  type              = "HTTP"
  resource_path     = var.health_check_path
  request_interval  = var.health_check_interval
  failure_threshold = 3
  tags              = merge(var.tags, { Name = "${var.name}-${each.key}-readyz" })
}

# One latency record per region. Once the routers' Route 53 sync runs (global-router chart
# dnsSync), its leader deletes a drained region's record and restores it on undrain; Terraform
# only creates the records and then leaves them to the sync.
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
    ignore_changes = all
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
