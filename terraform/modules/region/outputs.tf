output "router_endpoint" {
  description = "The region's OpenAI-compatible endpoint: its router load balancer."
  value       = "http://${data.aws_lb.router.dns_name}"
}

output "router_lb_dns_name" {
  description = "DNS name of the router Network Load Balancer (target of the Route 53 latency record)."
  value       = data.aws_lb.router.dns_name
}

output "router_lb_zone_id" {
  description = "Canonical hosted zone id of the router load balancer, for Route 53 aliases."
  value       = data.aws_lb.router.zone_id
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
