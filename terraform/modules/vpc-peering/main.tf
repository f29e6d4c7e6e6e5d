# Peers two regions' VPCs so gossip reaches pods across regions by their VPC addresses (routers
# and gateways advertise their pod IPs), and adds routes both ways.

terraform {
  required_version = ">= 1.6.0"

  required_providers {
    aws = {
      source                = "hashicorp/aws"
      version               = ">= 6.0, < 7.0"
      configuration_aliases = [aws.requester, aws.accepter]
    }
  }
}

variable "name" {
  description = "Name tag of the peering connection."
  type        = string

  validation {
    condition     = length(var.name) > 0 && length(var.name) <= 255
    error_message = "The name must be 1-255 characters."
  }
}

variable "requester" {
  description = "The requesting side: VPC id, CIDR and private route tables (route_table_count of them)."
  type = object({
    vpc_id          = string
    cidr            = string
    route_table_ids = list(string)
  })

  validation {
    condition     = can(cidrhost(var.requester.cidr, 0))
    error_message = "requester.cidr must be a valid IPv4 block."
  }
}

variable "accepter" {
  description = "The accepting side: VPC id, CIDR, private route tables and AWS region."
  type = object({
    vpc_id          = string
    cidr            = string
    route_table_ids = list(string)
    region          = string
  })

  validation {
    condition     = can(cidrhost(var.accepter.cidr, 0)) && can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.accepter.region))
    error_message = "accepter.cidr must be a valid IPv4 block and accepter.region an AWS region."
  }
}

variable "route_table_count" {
  description = "Private route tables on each side (the region module's availability_zone_count); known before apply."
  type        = number

  validation {
    condition     = var.route_table_count >= 1
    error_message = "There is at least one route table per side."
  }
}

resource "aws_vpc_peering_connection" "this" {
  provider    = aws.requester
  vpc_id      = var.requester.vpc_id
  peer_vpc_id = var.accepter.vpc_id
  peer_region = var.accepter.region
  tags        = { Name = var.name }
}

resource "aws_vpc_peering_connection_accepter" "this" {
  provider                  = aws.accepter
  vpc_peering_connection_id = aws_vpc_peering_connection.this.id
  auto_accept               = true
  tags                      = { Name = var.name }
}

resource "aws_route" "requester" {
  provider                  = aws.requester
  count                     = var.route_table_count
  route_table_id            = var.requester.route_table_ids[count.index]
  destination_cidr_block    = var.accepter.cidr
  vpc_peering_connection_id = aws_vpc_peering_connection_accepter.this.id
}

resource "aws_route" "accepter" {
  provider                  = aws.accepter
  count                     = var.route_table_count
  route_table_id            = var.accepter.route_table_ids[count.index]
  destination_cidr_block    = var.requester.cidr
  vpc_peering_connection_id = aws_vpc_peering_connection_accepter.this.id
}

output "id" {
  description = "Peering connection id."
  value       = aws_vpc_peering_connection.this.id
}
