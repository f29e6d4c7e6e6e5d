# One region module per AWS region, each with its own aws and helm providers.

provider "helm" {
  alias = "use1"
  kubernetes = {
    host                   = module.us_east_1.cluster_endpoint
    cluster_ca_certificate = base64decode(module.us_east_1.cluster_certificate_authority)
    exec = {
      api_version = "client.authentication.k8s.io/v1beta1"
      command     = "aws"
      args        = ["eks", "get-token", "--region", "us-east-1", "--cluster-name", module.us_east_1.cluster_name]
    }
  }
}

provider "helm" {
  alias = "usw2"
  kubernetes = {
    host                   = module.us_west_2.cluster_endpoint
    cluster_ca_certificate = base64decode(module.us_west_2.cluster_certificate_authority)
    exec = {
      api_version = "client.authentication.k8s.io/v1beta1"
      command     = "aws"
      args        = ["eks", "get-token", "--region", "us-west-2", "--cluster-name", module.us_west_2.cluster_name]
    }
  }
}

provider "helm" {
  alias = "euw1"
  kubernetes = {
    host                   = module.eu_west_1.cluster_endpoint
    cluster_ca_certificate = base64decode(module.eu_west_1.cluster_certificate_authority)
    exec = {
      api_version = "client.authentication.k8s.io/v1beta1"
      command     = "aws"
      args        = ["eks", "get-token", "--region", "eu-west-1", "--cluster-name", module.eu_west_1.cluster_name]
    }
  }
}

module "us_east_1" {
  source    = "../../modules/region"
  providers = { aws = aws.use1, helm = helm.use1 }

  name                    = "${var.name}-${local.regions["us-east-1"].short}"
  region                  = "us-east-1"
  vpc_cidr                = local.regions["us-east-1"].cidr
  availability_zone_count = local.az_count
  gpu_node_groups         = var.gpu_node_groups
  image_tag               = var.image_tag
  gossip_key              = module.global.gossip_keys
  gossip_join             = local.gossip_join["us-east-1"]
  peer_cidrs              = local.peer_cidrs["us-east-1"]
  etcd_endpoints          = module.global.etcd_endpoints
  etcd_tls_secret_name    = var.etcd_tls_secret_name
  router_tls              = var.router_tls
  router_admin_tls        = var.router_admin_tls
  router_gateway_tls      = local.router_gateway_tls
  gateway_tls             = local.gateway_tls["us-east-1"]

  gateway_advertise_url        = local.gateway_advertise_url["us-east-1"]
  cluster_registrations        = local.cluster_registrations
  previous_signing_public_keys = local.previous_signing_public_keys["us-east-1"]
  aggregator                   = local.aggregator["us-east-1"]
}

module "us_west_2" {
  source    = "../../modules/region"
  providers = { aws = aws.usw2, helm = helm.usw2 }

  name                    = "${var.name}-${local.regions["us-west-2"].short}"
  region                  = "us-west-2"
  vpc_cidr                = local.regions["us-west-2"].cidr
  availability_zone_count = local.az_count
  gpu_node_groups         = var.gpu_node_groups
  image_tag               = var.image_tag
  gossip_key              = module.global.gossip_keys
  gossip_join             = local.gossip_join["us-west-2"]
  peer_cidrs              = local.peer_cidrs["us-west-2"]
  etcd_endpoints          = module.global.etcd_endpoints
  etcd_tls_secret_name    = var.etcd_tls_secret_name
  router_tls              = var.router_tls
  router_admin_tls        = var.router_admin_tls
  router_gateway_tls      = local.router_gateway_tls
  gateway_tls             = local.gateway_tls["us-west-2"]

  gateway_advertise_url        = local.gateway_advertise_url["us-west-2"]
  cluster_registrations        = local.cluster_registrations
  previous_signing_public_keys = local.previous_signing_public_keys["us-west-2"]
  aggregator                   = local.aggregator["us-west-2"]
}

module "eu_west_1" {
  source    = "../../modules/region"
  providers = { aws = aws.euw1, helm = helm.euw1 }

  name                    = "${var.name}-${local.regions["eu-west-1"].short}"
  region                  = "eu-west-1"
  vpc_cidr                = local.regions["eu-west-1"].cidr
  availability_zone_count = local.az_count
  gpu_node_groups         = var.gpu_node_groups
  image_tag               = var.image_tag
  gossip_key              = module.global.gossip_keys
  gossip_join             = local.gossip_join["eu-west-1"]
  peer_cidrs              = local.peer_cidrs["eu-west-1"]
  etcd_endpoints          = module.global.etcd_endpoints
  etcd_tls_secret_name    = var.etcd_tls_secret_name
  router_tls              = var.router_tls
  router_admin_tls        = var.router_admin_tls
  router_gateway_tls      = local.router_gateway_tls
  gateway_tls             = local.gateway_tls["eu-west-1"]

  gateway_advertise_url        = local.gateway_advertise_url["eu-west-1"]
  cluster_registrations        = local.cluster_registrations
  previous_signing_public_keys = local.previous_signing_public_keys["eu-west-1"]
  aggregator                   = local.aggregator["eu-west-1"]
}

# Full mesh of VPC peering between the three regions.
module "peering_use1_usw2" {
  source    = "../../modules/vpc-peering"
  providers = { aws.requester = aws.use1, aws.accepter = aws.usw2 }

  name              = "${var.name}-use1-usw2"
  route_table_count = local.az_count
  requester         = { vpc_id = module.us_east_1.vpc_id, cidr = module.us_east_1.vpc_cidr, route_table_ids = module.us_east_1.private_route_table_ids }
  accepter          = { vpc_id = module.us_west_2.vpc_id, cidr = module.us_west_2.vpc_cidr, route_table_ids = module.us_west_2.private_route_table_ids, region = "us-west-2" }
}

module "peering_use1_euw1" {
  source    = "../../modules/vpc-peering"
  providers = { aws.requester = aws.use1, aws.accepter = aws.euw1 }

  name              = "${var.name}-use1-euw1"
  route_table_count = local.az_count
  requester         = { vpc_id = module.us_east_1.vpc_id, cidr = module.us_east_1.vpc_cidr, route_table_ids = module.us_east_1.private_route_table_ids }
  accepter          = { vpc_id = module.eu_west_1.vpc_id, cidr = module.eu_west_1.vpc_cidr, route_table_ids = module.eu_west_1.private_route_table_ids, region = "eu-west-1" }
}

module "peering_usw2_euw1" {
  source    = "../../modules/vpc-peering"
  providers = { aws.requester = aws.usw2, aws.accepter = aws.euw1 }

  name              = "${var.name}-usw2-euw1"
  route_table_count = local.az_count
  requester         = { vpc_id = module.us_west_2.vpc_id, cidr = module.us_west_2.vpc_cidr, route_table_ids = module.us_west_2.private_route_table_ids }
  accepter          = { vpc_id = module.eu_west_1.vpc_id, cidr = module.eu_west_1.vpc_cidr, route_table_ids = module.eu_west_1.private_route_table_ids, region = "eu-west-1" }
}
