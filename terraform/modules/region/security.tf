# Other regions' routers forward to this region's gateways (8080) and gossip with its pods (7946).
# With gateway_tls they reach the gateways through the internal gateway NLB instead, whose security
# groups the AWS Load Balancer Controller manages (from the proxy Service's source ranges, this VPC
# and peer_cidrs, and for the traffic and health check ports behind it). With regional gossip
# pools (aggregator) the gossip port stays inside the region and only the aggregators' WAN port
# (7947) is open to the other regions.
locals {
  peer_rules = merge([for cidr in var.peer_cidrs : merge(
    { "${cidr}-proxy" = { cidr = cidr, protocol = "tcp", port = 8080 } },
    local.aggregator ? {
      "${cidr}-wan-tcp" = { cidr = cidr, protocol = "tcp", port = local.wan_port }
      "${cidr}-wan-udp" = { cidr = cidr, protocol = "udp", port = local.wan_port }
      } : {
      "${cidr}-gossip-tcp" = { cidr = cidr, protocol = "tcp", port = 7946 }
      "${cidr}-gossip-udp" = { cidr = cidr, protocol = "udp", port = 7946 }
    },
  )]...)
}

resource "aws_vpc_security_group_ingress_rule" "peers" {
  for_each = local.peer_rules

  security_group_id = aws_eks_cluster.this.vpc_config[0].cluster_security_group_id
  cidr_ipv4         = each.value.cidr
  ip_protocol       = each.value.protocol
  from_port         = each.value.port
  to_port           = each.value.port
  description       = "Switchyard ${each.value.protocol}/${each.value.port} from ${each.value.cidr}"
  tags              = local.tags
}
